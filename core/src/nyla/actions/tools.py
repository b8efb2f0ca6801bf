"""Actions as tools: every action becomes a tool ``{method}_{action}`` whose JSON schema is
generated from its signature, a write (ordered barrier) when the action writes. The tool
takes its arguments unvalidated and hands them to the executor, so the executor is the one
place that validates them, whichever way the call comes."""

from __future__ import annotations

from nyla.actions.executor import ActionExecutor, RawArguments, toolbox_id
from nyla.models.actions import Action, Method
from nyla.models.tools import Tool, Toolbox

__all__ = ["RawArguments", "action_tool", "action_toolboxes", "toolbox_id"]


def action_tool(executor: ActionExecutor, method: Method, action: Action) -> Tool:
    """The tool of one action (:meth:`ActionExecutor.tool`: built there, so the policy hook
    sees the same tool whichever way the action is called)."""
    return executor.tool(method.name, action.name)


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
