"""Running a workflow node by node: :class:`RunEngine` takes a queued (or interrupted) run,
skips the nodes that finished before, feeds each node's parameters from the outputs of the
nodes connected to it, and runs it through the central action executor — with the run's
identity, budget and model — under its deadline, retrying what may pass on a second try,
stopping at a cancel. Every step is stored (:class:`~nyla.actions.run_store.RunStore`)
before the next begins, so a worker that dies loses at most the node it was running."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from nyla.actions.bridge import node_message_id
from nyla.models.agent import RunContext
from nyla.models.tools import ToolContext, ToolResult
from nyla.models.workflow_runs import NodeOutput, NodeRun, RunOptions
from nyla.models.workflows import WorkflowConnection, WorkflowNode

if TYPE_CHECKING:
    from nyla.actions.catalog import ActionCatalog
    from nyla.actions.executor import ActionExecutor
    from nyla.actions.run_store import RunStore
    from nyla.models.tool_services import ToolServices

log = logging.getLogger("nyla.actions")

#: refusals a second attempt cannot change: the node fails at once
FINAL_CODES = frozenset(
    {
        "UNKNOWN_ACTION",
        "MISSING_FIELD",
        "UNKNOWN_FIELD",
        "INVALID_TYPE",
        "INVALID_VALUE",
        "NOT_FOUND",
        "ACCESS_DENIED",
        "BUDGET_EXCEEDED",
    }
)
CANCELLED = "cancelled"


def feed(output: NodeOutput | None, kind: str) -> Any:
    """The value a node's output hands a connected parameter: its text (the action's own,
    without its documents' references), its data, or the file id(s) it produced (its result
    documents, else what its data names: ``fileId``, ``fileIds``)."""
    if output is None:
        return None
    if kind == "json":
        return output.data
    if kind in ("file", "files"):
        ids = _file_ids(output.data)
        if kind == "files":
            return ids
        return ids[0] if ids else None
    return output.text


def _file_ids(data: Any) -> list[str]:
    if not isinstance(data, dict):
        return []
    documents = [d.get("fileId") for d in data.get("documents") or [] if isinstance(d, dict)]
    if any(documents):
        return [str(d) for d in documents if d]
    if data.get("fileIds"):
        return [str(i) for i in data["fileIds"]]
    return [str(data["fileId"])] if data.get("fileId") else []


class _Run:
    """What the engine holds of one run while it executes it."""

    def __init__(self, run_id: str, context: RunContext, graph: dict[str, Any]) -> None:
        self.id = run_id
        self.context = context
        self.nodes = {n["id"]: WorkflowNode.model_validate(n) for n in graph.get("nodes", [])}
        self.connections = [
            WorkflowConnection.model_validate(c) for c in graph.get("connections", [])
        ]
        self.outputs: dict[str, NodeOutput | None] = {}
        self.cost = 0.0
        #: the conversation the nodes' documents go to, and their round and task numbers
        self.chat: Any = None
        self.round_number = self.task_number = 1


class RunEngine:
    """Executes workflow runs; built with the run store, the action catalog and executor,
    and the services a node's action gets (a callable: looked up when a run starts)."""

    def __init__(
        self,
        store: RunStore,
        catalog: ActionCatalog,
        executor: ActionExecutor,
        services: Callable[[], ToolServices],
        *,
        cancel_poll_s: float = 1.0,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.store, self.catalog, self.executor = store, catalog, executor
        self.services = services
        self.cancel_poll_s = cancel_poll_s
        self.sleep = sleep

    async def execute(self, run_id: str, worker: str) -> str | None:
        """Run (or go on with) ``run_id`` on ``worker``; returns how it ended (``None`` when
        it had ended before: nothing is repeated)."""
        if await self.store.claim(run_id, worker) is None:
            return None
        row = await self.store.row(run_id)
        current = await self.store.get(run_id)
        assert row is not None and current is not None
        run = _Run(run_id, RunContext.model_validate(row.context), row.graph)
        run.cost = current.cost_chf
        run.round_number, run.task_number = current.round_number, current.task_number
        options = current.options
        if current.conversation_id is not None:
            try:
                chat = self.services().files.workflows.load(current.conversation_id, run.context)
                run.chat = await chat
            except Exception as exc:  # the documents would have nowhere to go
                error = f"conversation {current.conversation_id} cannot be opened: {exc}"
                await self.store.finish(run_id, "failed", error)
                return "failed"
        for node_run in current.nodes:
            if node_run.status == "done":
                run.outputs[node_run.node_id] = node_run.output
                continue
            if await self.store.status(run_id) == CANCELLED:
                return CANCELLED
            if options.max_cost_chf is not None and run.cost >= options.max_cost_chf:
                error = f"the run's budget of CHF {options.max_cost_chf:g} is spent"
                await self.store.finish(run_id, "failed", error)
                return "failed"
            ended = await self._node(run, node_run, options)
            if ended == CANCELLED:
                return CANCELLED
            if ended is not None:
                await self.store.finish(run_id, "failed", ended)
                return "failed"
        await self.store.finish(run_id, "done")
        return "done"

    async def _node(self, run: _Run, node_run: NodeRun, options: RunOptions) -> str | None:
        """Run one node until it is done (``None``), fails (its error) or is cancelled."""
        node = run.nodes[node_run.node_id]
        inputs = self._inputs(run, node)
        while True:
            attempt = await self.store.node_started(run.id, node.id, inputs)
            spent: list[float] = []
            result = await self._attempt(run, node_run, inputs, options, spent)
            run.cost += sum(spent)
            if result is None:
                await self.store.node_cancelled(run.id, node.id)
                return CANCELLED
            if result.success:
                output = NodeOutput(text=result.content, data=result.data)
                await self.store.node_done(run.id, node.id, output, sum(spent))
                run.outputs[node.id] = output
                return None
            code = result.error_details.code if result.error_details else "ACTION_FAILED"
            error = result.error or code
            if code not in FINAL_CODES and attempt < options.max_attempts:
                await self.store.node_retry(run.id, node.id, error, code)
                await self.sleep(options.retry_delay_s)
                continue
            await self.store.node_failed(run.id, node.id, error, code)
            return f"node {node.id!r} failed: {error}"

    def _inputs(self, run: _Run, node: WorkflowNode) -> dict[str, Any]:
        """The node's parameters: those set on it, and those its connections feed."""
        inputs = dict(node.parameters)
        for c in run.connections:
            if c.to_node != node.id:
                continue
            source = run.nodes.get(c.from_node)
            found = self.catalog.get(source.method, source.action) if source else None
            kind = found[1].output if found else "text"
            inputs[c.to_parameter] = feed(run.outputs.get(c.from_node), kind)
        return inputs

    async def _attempt(
        self,
        run: _Run,
        node_run: NodeRun,
        inputs: dict[str, Any],
        options: RunOptions,
        spent: list[float],
    ) -> ToolResult | None:
        """One attempt of the node through the executor under the node deadline, its
        documents bound to the run's conversation as round, task and action (the node's
        place); ``None`` when the run was cancelled meanwhile (the attempt is stopped)."""
        node = run.nodes[node_run.node_id]
        remaining = None
        if options.max_cost_chf is not None:
            remaining = max(options.max_cost_chf - run.cost, 0.0)
        ctx = ToolContext(
            run=run.context,
            services=self.services(),
            run_id=run.id,
            remaining_budget_chf=remaining,
            on_charge=spent.append,
            model=options.model,
            round=run.round_number,
            task_number=run.task_number,
            action_number=node_run.position + 1,
            workflow=run.chat,
        )
        call = self.executor.run(
            node.method,
            node.action,
            dict(inputs),
            ctx,
            refs_in_text=False,
            message_id=node_message_id(run.id, node.id),  # run again: replaced, not doubled
        )
        task = asyncio.ensure_future(asyncio.wait_for(call, options.node_timeout_s))
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=self.cancel_poll_s)
                if done:
                    break
                if await self.store.status(run.id) == CANCELLED:
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
                    return None
            return task.result()
        except TimeoutError:
            limit = options.node_timeout_s or 0
            return ToolResult.fail(f"node {node.id!r} took longer than {limit:g} s", "TIMEOUT")
        finally:
            if not task.done():
                task.cancel()
