"""The ``workflow`` toolbox: the agent reads and edits a stored workflow graph through
``ctx.services.workflows`` (seeds: the graphical editor's agent tools). Every edit is a write
(an ordered barrier); ``workflowId`` goes through the kernel's owned-id check before a
handler runs, and the service checks it again against the caller."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from pydantic import Field

from nyla.agent.authorize import Owned
from nyla.hookspecs import hookimpl
from nyla.models.tools import Tool, Toolbox, ToolContext, ToolResult
from nyla.models.workflow_runs import RunOptions, WorkflowRun
from nyla.models.workflows import WorkflowConnection, WorkflowGraph
from nyla.tools._args import Args, ToolSpec, tools_from

WorkflowId = Annotated[str, Owned("workflowGraph")]
RunId = Annotated[str, Owned("workflowRun")]
#: how long runWorkflow may wait for a run to end (the run goes on after; readWorkflowRun)
RUN_WAIT_S = 600.0


def _guarded(
    fn: Callable[[Any, ToolContext], Awaitable[ToolResult]],
) -> Callable[[Any, ToolContext], Awaitable[ToolResult]]:
    """An unknown workflow or node, or an edit that does not fit, as a repairable result."""

    @functools.wraps(fn)
    async def wrapper(args: Any, ctx: ToolContext) -> ToolResult:
        try:
            return await fn(args, ctx)
        except LookupError as exc:
            return ToolResult.fail(str(exc).strip("'\""), "NOT_FOUND", field="workflowId")
        except ValueError as exc:
            return ToolResult.fail(str(exc), "INVALID_VALUE")

    return wrapper


def _summary(graph: WorkflowGraph) -> str:
    lines = [f"workflow {graph.id} '{graph.name}': {len(graph.nodes)} node(s)"]
    for node in graph.nodes:
        params = ", ".join(f"{k}={v!r}" for k, v in node.parameters.items()) or "-"
        lines.append(f"- {node.id}: {node.method}.{node.action} ({params})")
    for c in graph.connections:
        lines.append(f"- {c.from_node} -> {c.to_node}.{c.to_parameter}")
    return "\n".join(lines)


class WorkflowArgs(Args):
    workflow_id: WorkflowId = Field(description="Id of the workflow.")


@_guarded
async def read_workflow_graph(args: WorkflowArgs, ctx: ToolContext) -> ToolResult:
    graph = await ctx.services.workflows.get(args.workflow_id, ctx.run)
    return ToolResult.ok(_summary(graph), data=graph.to_wire())


class AddNodeArgs(WorkflowArgs):
    method: str = Field(description="The action's method (ai, context, ...).")
    action: str = Field(description="The action's name within the method.")
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="Parameters set on the node (camelCase names)."
    )
    node_id: str | None = Field(None, max_length=64, description="Id for the node (default n1..).")
    position: dict[str, float] | None = Field(None, description="Where the editor shows it.")


@_guarded
async def add_node(args: AddNodeArgs, ctx: ToolContext) -> ToolResult:
    node = await ctx.services.workflows.add_node(
        args.workflow_id,
        args.method,
        args.action,
        args.parameters,
        ctx.run,
        node_id=args.node_id,
        position=args.position,
    )
    return ToolResult.ok(f"added node {node.id} ({node.method}.{node.action})", data=node.to_wire())


class UpdateNodeArgs(WorkflowArgs):
    node_id: str = Field(description="Id of the node.")
    parameters: dict[str, Any] | None = Field(
        None, description="Parameters to set (merged; null unsets one)."
    )
    position: dict[str, float] | None = Field(None, description="New position.")


@_guarded
async def update_node(args: UpdateNodeArgs, ctx: ToolContext) -> ToolResult:
    node = await ctx.services.workflows.update_node(
        args.workflow_id, args.node_id, ctx.run, parameters=args.parameters, position=args.position
    )
    return ToolResult.ok(f"updated node {node.id}", data=node.to_wire())


class NodeArgs(WorkflowArgs):
    node_id: str = Field(description="Id of the node.")


@_guarded
async def remove_node(args: NodeArgs, ctx: ToolContext) -> ToolResult:
    dropped = await ctx.services.workflows.remove_node(args.workflow_id, args.node_id, ctx.run)
    return ToolResult.ok(
        f"removed node {args.node_id} and {dropped} connection(s)",
        data={"nodeId": args.node_id, "connectionsRemoved": dropped},
    )


class ConnectArgs(WorkflowArgs):
    from_node: str = Field(description="The node whose output feeds the parameter.")
    to_node: str = Field(description="The node whose parameter is fed.")
    to_parameter: str = Field(description="The fed parameter (camelCase name).")

    def connection(self) -> WorkflowConnection:
        return WorkflowConnection(
            from_node=self.from_node, to_node=self.to_node, to_parameter=self.to_parameter
        )


@_guarded
async def connect_nodes(args: ConnectArgs, ctx: ToolContext) -> ToolResult:
    await ctx.services.workflows.connect(args.workflow_id, args.connection(), ctx.run)
    return ToolResult.ok(
        f"connected {args.from_node} -> {args.to_node}.{args.to_parameter}",
        data=args.connection().to_wire(),
    )


@_guarded
async def disconnect_nodes(args: ConnectArgs, ctx: ToolContext) -> ToolResult:
    await ctx.services.workflows.disconnect(args.workflow_id, args.connection(), ctx.run)
    return ToolResult.ok(
        f"disconnected {args.from_node} -> {args.to_node}.{args.to_parameter}",
        data=args.connection().to_wire(),
    )


@_guarded
async def validate_workflow(args: WorkflowArgs, ctx: ToolContext) -> ToolResult:
    problems = await ctx.services.workflows.validate(args.workflow_id, ctx.run)
    wire = {"valid": not problems, "problems": [p.to_wire() for p in problems]}
    if not problems:
        return ToolResult.ok(f"workflow {args.workflow_id} is valid", data=wire)
    text = "\n".join(f"- [{p.code}] {p.message}" for p in problems)
    return ToolResult.ok(
        f"workflow {args.workflow_id} has {len(problems)} problem(s):\n{text}", data=wire
    )


class RunWorkflowArgs(WorkflowArgs):
    max_attempts: int = Field(2, ge=1, le=10, description="Attempts per node.")
    node_timeout_s: float | None = Field(
        None, gt=0, le=3600, description="Seconds each node attempt may take."
    )
    wait: bool = Field(True, description="Wait until the run ends (else answer its id at once).")


def _run_summary(run: WorkflowRun) -> str:
    lines = [f"run {run.id} of workflow {run.workflow_id}: {run.status}"]
    if run.error:
        lines.append(f"error: {run.error}")
    for node in run.nodes:
        told = node.error or (node.output.text if node.output else "")
        told = told if len(told) <= 400 else told[:397] + "..."
        lines.append(f"- {node.node_id} {node.method}.{node.action}: {node.status}. {told}")
    return "\n".join(lines)


@_guarded
async def run_workflow(args: RunWorkflowArgs, ctx: ToolContext) -> ToolResult:
    runs = ctx.services.workflows.runs
    options = RunOptions(
        max_attempts=args.max_attempts,
        node_timeout_s=args.node_timeout_s,
        max_cost_chf=ctx.remaining_budget_chf,
        model=ctx.model,
    )
    run = await runs.start(
        args.workflow_id,
        ctx.run,
        options,
        round_number=ctx.round,
        task_number=ctx.task_number,
    )
    if args.wait:
        run = await runs.wait(run.id, ctx.run)
        ctx.charge(run.cost_chf)  # the run spends the agent run's budget
    return ToolResult.ok(_run_summary(run), data=run.to_wire())


class ReadRunArgs(Args):
    run_id: RunId = Field(description="Id of the run (runWorkflow answers it).")


@_guarded
async def read_workflow_run(args: ReadRunArgs, ctx: ToolContext) -> ToolResult:
    run = await ctx.services.workflows.runs.get(args.run_id, ctx.run)
    return ToolResult.ok(_run_summary(run), data=run.to_wire())


def workflow_tools() -> list[Tool]:
    """The tools of the ``workflow`` toolbox."""
    spec: list[ToolSpec] = [
        ("readWorkflowGraph", "Read a workflow's nodes and connections.", WorkflowArgs, read_workflow_graph, True),
        ("addNode", "Add an action node (method, action, parameters) to a workflow.", AddNodeArgs, add_node, False),
        ("updateNode", "Change a node's parameters (merged; null unsets) or position.", UpdateNodeArgs, update_node, False),
        ("removeNode", "Remove a node and its connections.", NodeArgs, remove_node, False),
        ("connectNodes", "Feed a node's output into another node's parameter.", ConnectArgs, connect_nodes, False),
        ("disconnectNodes", "Remove a connection between two nodes.", ConnectArgs, disconnect_nodes, False),
        ("validateWorkflow", "Check a workflow: unknown actions, missing parameters, type mismatches, cycles.", WorkflowArgs, validate_workflow, True),
        ("runWorkflow", "Run a valid workflow node by node and answer each node's result (or, with wait false, the run id at once).", RunWorkflowArgs, run_workflow, False),
        ("readWorkflowRun", "Read a workflow run: its status and each node's status, output or error.", ReadRunArgs, read_workflow_run, True),
    ]  # fmt: skip
    tools = tools_from(spec)
    for tool in tools:
        if tool.name == "runWorkflow":  # a run takes as long as its nodes
            tool.timeout_s = RUN_WAIT_S
    return tools


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The ``workflow`` toolbox: on in the runs of a feature that declares the graphical
    editor; otherwise requested, or put in ``AgentConfig.initial_toolboxes``."""
    return [
        Toolbox(
            id="workflow",
            label="Workflow editor",
            description="Read, edit, validate and run stored workflow graphs of action nodes.",
            tools=workflow_tools(),
            default_active=False,
            graphical_editor=True,
        )
    ]
