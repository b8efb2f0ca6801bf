"""nyla-toolbox-clickup: search, read and write ClickUp tasks over the user's ClickUp
connection (through the kernel's connector registry) with nyla's task tools; ClickUp
supplies its words and how a search runs. Writes pass the before-tool-call policy first
(``NYLA_CLICKUP_WRITE=off`` denies them)."""

from __future__ import annotations

from nyla.sdk import TaskArg, TaskSearchArgs, TaskToolbox

__all__ = ["TASKS", "ClickUpTasks", "nyla_before_tool_call", "nyla_toolboxes"]


class ClickUpTasks(TaskToolbox):
    """``searchClickUpTasks``, ``readClickUpTask``, ``writeClickUpTask`` over the user's
    ``clickup`` connection."""

    service = "clickup"
    label = "ClickUp"
    key_field = "customId"
    search_help = (
        "Search ClickUp tasks by words and/or filters (mine, openOnly, dueFrom/dueTo), "
        "scoped to a workspace, space, folder or list."
    )
    search_timeout_s = 90
    query_help = "Words in the task name or description."
    search_in = TaskArg(
        "scope",
        "A path from a result or listing: /<workspace>[/<space>[/<folder>[/<list>]]] "
        "(`-` for the folder of a folderless list), or a list id; empty: every workspace.",
    )
    read_ref = TaskArg("task", "Task id from a search (e.g. 86c0abc1).")
    update_ref = TaskArg("task", "Task id to update.")
    create_in = TaskArg("list", "List id or list path to create in.")
    status_help = "Target status name of the list."
    priority_help = "urgent, high, normal or low."

    def structured(self, args: TaskSearchArgs) -> bool:
        """Filters, or a bare list id as the scope (the task search takes list ids; a path
        goes to ClickUp's own search)."""
        bare_list = bool(args.container) and "/" not in args.container
        return args.filtered or bare_list


#: the toolbox; its hooks are this plugin's
TASKS = ClickUpTasks()
nyla_toolboxes = TASKS.nyla_toolboxes
nyla_before_tool_call = TASKS.nyla_before_tool_call
