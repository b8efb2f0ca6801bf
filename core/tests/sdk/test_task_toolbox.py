"""nyla.sdk.TaskToolbox: a service's words become the tools' names, arguments and texts; a
search goes to the structured task search or the service's own; answers are one line per
task. (The ClickUp and Jira toolboxes run the same tools over their connectors' fakes.)"""

from __future__ import annotations

from datetime import date
from types import SimpleNamespace
from typing import Any

import pytest

from nyla.sdk import (
    TaskArg,
    TaskSearchArgs,
    TaskToolbox,
    ToolContext,
)
from nyla.sdk.connectors import Item, ItemPage, TaskChange, TaskDetail, TaskQuery


class AsanaTasks(TaskToolbox):
    service = "asana"
    label = "Asana"
    key_field = "gid"
    search_help = "Search Asana tasks by words or filters."
    query_help = "Words in the task name."
    search_in = TaskArg("project", "Project gid; empty: every project.")
    read_ref = TaskArg("task", "Task gid from a search.")
    update_ref = TaskArg("task", "Task gid to update.")
    create_in = TaskArg("project", "Project gid to create the task in.")
    status_help = "Section name."


class Adapter:
    """Records what the tools asked for; answers with one task."""

    def __init__(self, items: list[Item]) -> None:
        self.items = items
        self.calls: list[tuple[Any, ...]] = []

    async def search(self, s: Any, query: str, scope: str, cursor: str | None) -> ItemPage:
        self.calls.append(("search", query, scope))
        return ItemPage(items=self.items, cursor="c2" if self.items else None)

    async def search_tasks(self, s: Any, query: TaskQuery, cursor: str | None) -> ItemPage:
        self.calls.append(("search_tasks", query))
        return ItemPage(items=self.items)

    async def read_task(self, s: Any, task_id: str) -> TaskDetail:
        return TaskDetail(item=self.items[0], description="Ship it.")

    async def update_task(self, s: Any, task_id: str, change: TaskChange) -> Item:
        self.calls.append(("update_task", task_id, change))
        return self.items[0]


TASK = Item(
    id="120", title="Ship v2", kind="task", status="open", due=date(2026, 1, 7),
    extra={"vendor": {"gid": "A-120"}},
)  # fmt: skip


@pytest.fixture
def asana() -> AsanaTasks:
    return AsanaTasks()


def session(items: list[Item]) -> Any:
    return SimpleNamespace(adapter=Adapter(items), connection=None, http=None)


def test_the_service_s_words_make_the_tools(asana):
    [box] = asana.nyla_toolboxes()
    assert box.id == "asana" and box.requires_connection == "asana" and not box.default_active
    search, read, write = box.tools
    assert [t.name for t in box.tools] == ["searchAsanaTasks", "readAsanaTask", "writeAsanaTask"]
    assert [t.read_only for t in box.tools] == [True, True, False]
    assert write.description.startswith("Create an Asana task (project + title)")
    assert list(search.parameters["properties"]) == [
        "connectionId", "query", "project", "mine", "openOnly", "dueFrom", "dueTo", "cursor",
    ]  # fmt: skip
    props = search.parameters["properties"]
    assert props["connectionId"]["description"].startswith("The Asana connection;")
    assert props["openOnly"]["description"] == "Leave out closed tasks."
    assert read.parameters["required"] == ["task"]
    assert write.parameters["description"] == (
        "Arguments of ``writeAsanaTask``: a ``task`` updates it, a ``project`` creates one."
    )
    assert asana.write_args.model_validate({"project": "P1"}).container == "P1"


async def test_filters_go_to_the_task_search_and_words_to_the_service_s(asana):
    s = session([TASK])
    filtered = asana.search_args.model_validate({"mine": True, "project": "P1"})
    result = await asana.search(filtered, ToolContext(), s)
    assert s.adapter.calls[0][0] == "search_tasks" and s.adapter.calls[0][1].container == "P1"
    assert result.content.splitlines()[0].startswith("☑️ A-120 Ship v2")
    assert "(task lines are complete: read a task only" in result.content
    words = TaskSearchArgs.model_validate({"query": "ship"})
    more = await asana.search(words, ToolContext(), s)
    assert s.adapter.calls[1] == ("search", "ship", "")
    assert "more results: pass cursor='c2'" in more.content


async def test_answers_and_refusals(asana):
    empty = await asana.search(TaskSearchArgs(), ToolContext(), session([]))
    assert empty.success and empty.content == "no tasks match"
    backwards = TaskSearchArgs.model_validate({"dueFrom": "2026-02-01", "dueTo": "2026-01-01"})
    refused = await asana.search(backwards, ToolContext(), session([TASK]))
    assert refused.error_details.field == "dueFrom"
    read = await asana.read(asana.read_args(task="120"), ToolContext(), session([TASK]))
    assert "Ship it." in read.content
    neither = await asana.write(asana.write_args(), ToolContext(), session([TASK]))
    assert neither.error_details.code == "MISSING_FIELD" and neither.error_details.field == "task"
    s = session([TASK])
    nothing = await asana.write(asana.write_args(task="120"), ToolContext(), s)
    assert nothing.error == "nothing to change" and not s.adapter.calls
    done = await asana.write(asana.write_args(task="120", status="Done"), ToolContext(), s)
    assert done.content.startswith("updated: ") and s.adapter.calls[0][2].status == "Done"
