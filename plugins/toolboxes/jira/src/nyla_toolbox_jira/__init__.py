"""nyla-toolbox-jira: search, read and write Jira issues over the user's Jira connection
(through the kernel's connector registry); writes pass the before-tool-call policy first."""

from __future__ import annotations

from typing import Any

from nyla import Tool, Toolbox, ToolContext, ToolResult, config_value, hookimpl
from nyla_toolbox_jira.tools import WRITE_TOOL, jira_tools

__all__ = ["jira_toolbox", "nyla_before_tool_call", "nyla_toolboxes"]


def jira_toolbox() -> Toolbox:
    """The ``jira`` toolbox."""
    return Toolbox(
        id="jira",
        label="Jira",
        description="Search, read, create and update the user's Jira issues.",
        tools=jira_tools(),
        default_active=False,
        requires_connection="jira",
    )


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The Jira toolbox."""
    return [jira_toolbox()]


@hookimpl
def nyla_before_tool_call(
    tool: Tool, arguments: dict[str, Any], context: ToolContext
) -> ToolResult | None:
    """The write barrier: ``NYLA_JIRA_WRITE=off`` denies every Jira write."""
    if tool.name != WRITE_TOOL:
        return None
    if (config_value("NYLA_JIRA_WRITE") or "on").lower() in ("off", "0", "false", "no"):
        return ToolResult.fail(
            "changing Jira is switched off here (NYLA_JIRA_WRITE=off)",
            "DENIED",
            suggestion="tell the user what to change in Jira",
        )
    return None
