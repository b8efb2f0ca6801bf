"""nyla-toolbox-clickup: search, read and write ClickUp tasks over the user's ClickUp
connection (through the kernel's connector registry); writes pass the before-tool-call
policy first."""

from __future__ import annotations

from typing import Any

from nyla import Tool, Toolbox, ToolContext, ToolResult, config_value, hookimpl
from nyla_toolbox_clickup.tools import WRITE_TOOL, clickup_tools

__all__ = ["clickup_toolbox", "nyla_before_tool_call", "nyla_toolboxes"]


def clickup_toolbox() -> Toolbox:
    """The ``clickup`` toolbox."""
    return Toolbox(
        id="clickup",
        label="ClickUp",
        description="Search, read, create and update the user's ClickUp tasks.",
        tools=clickup_tools(),
        default_active=False,
        requires_connection="clickup",
    )


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The ClickUp toolbox."""
    return [clickup_toolbox()]


@hookimpl
def nyla_before_tool_call(
    tool: Tool, arguments: dict[str, Any], context: ToolContext
) -> ToolResult | None:
    """The write barrier: ``NYLA_CLICKUP_WRITE=off`` denies every ClickUp write."""
    if tool.name != WRITE_TOOL:
        return None
    if (config_value("NYLA_CLICKUP_WRITE") or "on").lower() in ("off", "0", "false", "no"):
        return ToolResult.fail(
            "changing ClickUp is switched off here (NYLA_CLICKUP_WRITE=off)",
            "DENIED",
            suggestion="tell the user what to change in ClickUp",
        )
    return None
