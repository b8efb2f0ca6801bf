"""Jira's words for the task tools (``searchJiraIssues``, ``readJiraIssue``,
``writeJiraIssue``), and how a Jira search runs: JQL (``jql:...``) and plain words go to
Jira's own search within the project, filters to the structured issue search."""

from __future__ import annotations

from nyla.sdk import TaskArg, TaskSearchArgs, TaskToolbox


class JiraIssues(TaskToolbox):
    """The task tools over the user's ``jira`` connection."""

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
        """Filters, unless the query is JQL (which states its own)."""
        return args.filtered and not args.query.lower().startswith("jql:")

    def search_scope(self, args: TaskSearchArgs) -> str:
        """The project as Jira's search scope (``/<key>``)."""
        return f"/{args.container}" if args.container else ""
