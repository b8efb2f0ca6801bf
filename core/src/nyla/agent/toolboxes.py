"""The toolbox registry and the ``requestToolbox`` meta-tool (seeds: Toolbox Registry).

Activation for a run: default toolboxes always; connection-dependent ones when the user has
that connection (``RunContext.connections``); feature toolboxes when the run works in an
instance of that feature (``RunContext.feature_code``; ``ANY_FEATURE`` ones in a run of any
feature instance); the graphical editor's toolboxes in a run of a feature that declares it;
plus ``AgentConfig.initial_toolboxes``; plus whatever the agent requests
at run time. ``requestToolbox`` offers only the toolboxes not yet active, and
the tools of a requested toolbox are visible from the next round on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from nyla.models.agent import AgentConfig, RunContext
from nyla.models.tools import ANY_FEATURE, Tool, Toolbox, ToolContext, ToolResult

REQUEST_TOOLBOX = "requestToolbox"

# Workflow-action tools are named ``method_action`` (seeds: ActionToolAdapter).
_ACTION_TOOL = re.compile(r"^[a-z][A-Za-z0-9]*_[A-Za-z0-9_]+$")


def is_action_tool(tool: Tool) -> bool:
    """Whether a tool is a workflow action (left out with ``exclude_action_tools``)."""
    return bool(_ACTION_TOOL.match(tool.name))


def request_toolbox_tool(inactive_ids: list[str], session: ToolboxSession | None = None) -> Tool:
    """The ``requestToolbox`` meta-tool offering ``inactive_ids``.

    Schema ``{toolboxId: enum[inactive ids], reason: string}``. The handler activates the
    toolbox in the run's :class:`ToolboxSession` (``session``, or ``ctx.toolboxes``).
    """
    ids = tuple(sorted(inactive_ids))
    args_model, schema = _request_arguments(ids)

    async def handler(args: Any, ctx: ToolContext) -> ToolResult:
        target = session or ctx.toolboxes
        if target is None:
            return ToolResult.fail("toolboxes cannot be requested in this run", "NOT_AVAILABLE")
        return target.request(args.toolbox_id, args.reason)

    listing = ", ".join(ids) if ids else "none (every toolbox is already active)"
    return Tool(
        name=REQUEST_TOOLBOX,
        description="Activate an inactive toolbox when the task needs tools you do not have "
        f"yet. Its tools are available from the next round on. Inactive toolboxes: {listing}.",
        parameters=schema,
        args_model=args_model,
        handler=handler,
        read_only=False,
    )


@lru_cache(maxsize=64)
def _request_arguments(ids: tuple[str, ...]) -> tuple[type[BaseModel], dict[str, Any]]:
    """The arguments model of ``requestToolbox`` offering ``ids`` and its JSON schema, made
    once per set of ids (a model and its schema cost about 1 ms of CPU, every run)."""
    id_type: Any = Literal[ids] if ids else str  # type: ignore[valid-type]
    args_model = create_model(
        "RequestToolboxArgs",
        __config__=ConfigDict(extra="forbid", populate_by_name=True),
        toolbox_id=(
            id_type,
            Field(alias="toolboxId", description="Id of the inactive toolbox to activate."),
        ),
        reason=(str, Field(description="Why the task needs this toolbox.")),
    )
    schema = args_model.model_json_schema(by_alias=True)
    schema.pop("title", None)
    if ids:  # pydantic writes a one-value Literal as "const"; the seeds promise an enum
        schema["properties"]["toolboxId"] = {
            "type": "string",
            "enum": list(ids),
            "description": "Id of the inactive toolbox to activate.",
        }
    return args_model, schema


class ToolboxSession:
    """The toolboxes of one run: which are active, and the tool list the loop reads.

    ``tools`` is one list object that the loop re-reads every round; activating a toolbox
    updates it in place (new tools appended, ``requestToolbox`` replaced by one offering the
    remaining inactive toolboxes).
    """

    def __init__(
        self,
        toolboxes: dict[str, Toolbox],
        active: Iterable[str],
        *,
        exclude_action_tools: bool = False,
        extra_tools: Iterable[Tool] = (),
    ) -> None:
        self.toolboxes = toolboxes
        self.active: list[str] = []
        self.requested: list[dict[str, str]] = []
        self.exclude_action_tools = exclude_action_tools
        self.extra_tools = list(extra_tools)
        for tb_id in active:
            if tb_id in toolboxes and tb_id not in self.active:
                self.active.append(tb_id)
        self.tools: list[Tool] = []
        self._rebuild()

    @property
    def inactive(self) -> list[str]:
        """Ids of the toolboxes that may still be requested."""
        return sorted(set(self.toolboxes) - set(self.active))

    def _rebuild(self) -> None:
        tools: list[Tool] = []
        for tb_id in self.active:
            for tool in self.toolboxes[tb_id].tools:
                if self.exclude_action_tools and is_action_tool(tool):
                    continue
                if tool.toolbox is None:
                    tool.toolbox = tb_id
                tools.append(tool)
        tools.extend(self.extra_tools)
        if self.inactive:
            tools.append(request_toolbox_tool(self.inactive, self))
        self.tools[:] = tools

    def request(self, toolbox_id: str, reason: str = "") -> ToolResult:
        """Activate ``toolbox_id`` (the ``requestToolbox`` handler)."""
        if toolbox_id in self.active:
            return ToolResult.ok(f"toolbox {toolbox_id!r} is already active")
        toolbox = self.toolboxes.get(toolbox_id)
        if toolbox is None:
            return ToolResult.fail(
                f"no toolbox {toolbox_id!r}",
                "INVALID_VALUE",
                field="toolboxId",
                suggestion=f"one of: {', '.join(self.inactive)}",
            )
        self.active.append(toolbox_id)
        self.requested.append({"toolboxId": toolbox_id, "reason": reason})
        self._rebuild()
        names = ", ".join(t.name for t in toolbox.tools)
        return ToolResult.ok(
            f"toolbox {toolbox_id!r} activated; from the next round you can call: {names}",
            data={"toolboxId": toolbox_id, "tools": [t.name for t in toolbox.tools]},
        )


def initial_toolboxes(
    toolboxes: dict[str, Toolbox],
    config: AgentConfig,
    context: RunContext,
    *,
    graphical_editor: bool = False,
) -> list[str]:
    """Ids active at the start of a run, in registry order (``graphical_editor``: the run's
    feature declares the graphical editor, whose toolboxes come on)."""
    feature = context.feature_code
    in_instance = feature is not None or context.feature_instance_id is not None
    connections = set(context.connections)
    wanted = set(config.initial_toolboxes)
    active = []
    for tb in toolboxes.values():
        if (
            tb.default_active
            or any(service in connections for service in tb.connection_services)
            or (tb.feature_code is not None and tb.feature_code == feature)
            or (tb.feature_code == ANY_FEATURE and in_instance)
            or (tb.graphical_editor and graphical_editor)
            or tb.id in wanted
        ):
            active.append(tb.id)
    return active


def open_session(
    toolboxes: dict[str, Toolbox],
    config: AgentConfig,
    context: RunContext,
    *,
    extra_tools: Iterable[Tool] = (),
    graphical_editor: bool = False,
) -> ToolboxSession:
    """The toolbox session of a new run (``config.tool_set == "none"`` starts with none)."""
    active = (
        []
        if config.tool_set == "none"
        else initial_toolboxes(toolboxes, config, context, graphical_editor=graphical_editor)
    )
    return ToolboxSession(
        toolboxes,
        active,
        exclude_action_tools=config.exclude_action_tools,
        extra_tools=extra_tools,
    )
