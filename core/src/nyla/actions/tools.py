"""Actions as tools: every action becomes a tool ``{method}_{action}`` whose JSON schema is
generated from its signature, a write (ordered barrier) when the action writes. The tool
takes its arguments unvalidated and hands them to the executor, so the executor is the one
place that validates them, whichever way the call comes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from nyla.actions.catalog import parameters_schema, tool_name
from nyla.actions.executor import DEFAULT_TIMEOUT_S, ActionExecutor
from nyla.models.actions import Action, Method
from nyla.models.tools import Tool, Toolbox, ToolContext, ToolResult


class RawArguments(BaseModel):
    """The arguments of an action tool as the model sent them (the executor validates)."""

    model_config = ConfigDict(extra="allow")


def toolbox_id(method: str) -> str:
    """The toolbox holding a method's action tools."""
    return f"actions.{method}"


def action_tool(executor: ActionExecutor, method: Method, action: Action) -> Tool:
    """The tool of one action."""
    method_name, action_name = method.name, action.name

    async def handler(args: RawArguments, ctx: ToolContext) -> ToolResult:
        return await executor.run(method_name, action_name, dict(args.model_extra or {}), ctx)

    return Tool(
        name=tool_name(method_name, action_name),
        description=action.description,
        parameters=parameters_schema(action.params),
        args_model=RawArguments,
        handler=handler,
        read_only=not action.writes,
        # the executor's own deadline ends first and answers TIMEOUT as a result
        timeout_s=(action.timeout_s or DEFAULT_TIMEOUT_S) + 5.0,
        toolbox=toolbox_id(method_name),
    )


def action_toolboxes(executor: ActionExecutor) -> dict[str, Toolbox]:
    """One toolbox per method, holding its action tools: on in every run, or in the runs of
    its feature when the method names one."""
    boxes = {}
    for method in executor.catalog.methods():
        tools = [action_tool(executor, method, a) for a in sorted(method.actions, key=_name)]
        boxes[toolbox_id(method.name)] = Toolbox(
            id=toolbox_id(method.name),
            label=f"Workflow actions: {method.name}",
            description=method.description,
            tools=tools,
            default_active=method.feature_code is None,
            feature_code=method.feature_code,
        )
    return boxes


def _name(action: Action) -> str:
    return action.name
