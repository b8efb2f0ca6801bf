"""nyla-toolbox-clickup: search, read and write ClickUp tasks over the user's ClickUp
connection (through the kernel's connector registry); writes pass the before-tool-call
policy first (``NYLA_CLICKUP_WRITE=off`` denies them)."""

from __future__ import annotations

from typing import Any

from nyla.sdk import Tool, Toolbox, ToolContext, ToolResult, hookimpl
from nyla_toolbox_clickup.tasks import ClickUpTasks

__all__ = ["TASKS", "nyla_before_tool_call", "nyla_toolboxes"]

#: the toolbox's tools and write barrier
TASKS = ClickUpTasks()


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The ClickUp toolbox."""
    return [TASKS.toolbox()]


@hookimpl
def nyla_before_tool_call(
    tool: Tool, arguments: dict[str, Any], context: ToolContext
) -> ToolResult | None:
    """The write barrier: ``NYLA_CLICKUP_WRITE=off`` denies every ClickUp write."""
    return TASKS.barrier(tool, arguments, context)
