"""nyla-toolbox-jira: search, read and write Jira issues over the user's Jira connection
(through the kernel's connector registry) with nyla's task tools; Jira supplies its words
and how a search runs. Writes pass the before-tool-call policy first (``NYLA_JIRA_WRITE=off``
denies them)."""

from __future__ import annotations

from nyla.sdk import TaskArg, TaskSearchArgs, TaskToolbox

__all__ = ["ISSUES", "JiraIssues", "nyla_before_tool_call", "nyla_toolboxes"]


class JiraIssues(TaskToolbox):
    """``searchJiraIssues``, ``readJiraIssue``, ``writeJiraIssue`` over the user's ``jira``
    connection."""

    service = "jira"
    label = "Jira"
    noun = "issue"
    done = "done"
    key_field = "key"
    search_help = (
        "Search Jira issues by words or JQL, or by filters (mine, openOnly, dueFrom/dueTo)."
    )
    query_help = "Words to find, or `jql:<JQL>`."
    search_in = TaskArg("project", "Project key; empty: every project.")
    read_ref = TaskArg("issue", "Issue key (ED-12) or id from a search.")
    update_ref = TaskArg("issue", "Issue key or id to update.")
    create_in = TaskArg("project", "Project key to create an issue in.")
    status_help = "Target status name (by transition)."

    def structured(self, args: TaskSearchArgs) -> bool:
        """Filters, unless the query is JQL (``jql:...``, which states its own); words alone
        go to Jira's own search."""
        return args.filtered and not args.query.lower().startswith("jql:")

    def search_scope(self, args: TaskSearchArgs) -> str:
        """The project as Jira's search scope (``/<key>``)."""
        return f"/{args.container}" if args.container else ""


#: the toolbox; its hooks are this plugin's
ISSUES = JiraIssues()
nyla_toolboxes = ISSUES.nyla_toolboxes
nyla_before_tool_call = ISSUES.nyla_before_tool_call
