"""nyla-toolbox-jira: search, read and write Jira issues over the user's Jira connection
(through the kernel's connector registry); writes pass the before-tool-call policy first
(``NYLA_JIRA_WRITE=off`` denies them)."""

from __future__ import annotations

from typing import Any

from nyla.sdk import Tool, Toolbox, ToolContext, ToolResult, hookimpl
from nyla_toolbox_jira.tasks import JiraIssues

__all__ = ["ISSUES", "nyla_before_tool_call", "nyla_toolboxes"]

#: the toolbox's tools and write barrier
ISSUES = JiraIssues()


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The Jira toolbox."""
    return [ISSUES.toolbox()]


@hookimpl
def nyla_before_tool_call(
    tool: Tool, arguments: dict[str, Any], context: ToolContext
) -> ToolResult | None:
    """The write barrier: ``NYLA_JIRA_WRITE=off`` denies every Jira write."""
    return ISSUES.barrier(tool, arguments, context)
