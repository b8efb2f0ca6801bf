"""The three ClickUp tools over the ClickUp connector and the fake account, called as a run
calls them (through the tool registry and the before-tool-call hooks)."""

from __future__ import annotations

import functools

from nyla.testing import call_tool

from .conftest import USER, fake_clickup

call = functools.partial(call_tool, user=USER)


async def test_search_open_mine_due_this_week_inline(kernel, connection, clickup):
    result = await call(
        kernel,
        "searchClickUpTasks",
        {"mine": True, "openOnly": True, "dueFrom": "2026-01-05", "dueTo": "2026-01-11"},
    )
    assert result.success, result.error
    lines = result.content.splitlines()
    assert lines[0] == (
        "☑️ Fix checkout — status to do; assignee Mia Krystof; due 2026-01-07 [id: 86c1]"
    )
    assert len([line for line in lines if line.startswith("☑️")]) == 1, "done/other/later out"
    assert "task lines are complete" in result.content
    sent = next(r for r in clickup.requests if r.url.path.endswith("/team/9001/task"))
    assert sent.url.params.get_list("assignees[]") == ["183"]


async def test_search_words_in_a_scope(kernel, connection, clickup):
    text = await call(kernel, "searchClickUpTasks", {"query": "logo", "scope": "/9001/790"})
    assert "Update logo" in text.content and "assignee Leo Brand" in text.content
    in_list = await call(kernel, "searchClickUpTasks", {"query": "review", "scope": "124"})
    assert "Review budget" in in_list.content and "Fix checkout" not in in_list.content
    none = await call(kernel, "searchClickUpTasks", {"query": "zeppelin"})
    assert none.success and none.content.startswith("no tasks match")


async def test_read_with_comments(kernel, connection, clickup):
    clickup.comments["86c3"] = [fake_clickup.sample("comments")["comments"][0]]
    result = await call(kernel, "readClickUpTask", {"task": "86c3"})
    assert result.success, result.error
    assert "Main order flow broken" in result.content
    assert (
        "- Leo Brand (2026-01-06T09:15+00:00): Reproduced on staging, fix is in review."
        in result.content
    )


async def test_write_updates_and_creates(kernel, connection, clickup):
    done = await call(
        kernel, "writeClickUpTask", {"task": "86c1", "status": "complete", "comment": "Fixed"}
    )
    assert done.success, done.error
    assert "status complete" in done.content
    assert [w[0] for w in clickup.writes] == ["update", "comment"]
    new = await call(
        kernel,
        "writeClickUpTask",
        {"list": "901", "title": "Plan Q2", "due": "2026-04-01", "assignee": "me"},
    )
    assert new.success, new.error
    assert "Plan Q2" in new.content and "due 2026-04-01" in new.content
    assert "assignee Mia Krystof" in new.content


async def test_writes_are_a_barrier_behind_the_policy(kernel, connection, clickup, monkeypatch):
    monkeypatch.setenv("NYLA_CLICKUP_WRITE", "off")
    denied = await call(kernel, "writeClickUpTask", {"task": "86c1", "status": "complete"})
    assert not denied.success and denied.error_details.code == "DENIED"
    assert clickup.writes == [], "the denied write reached ClickUp"
    assert [t.read_only for t in kernel.plugins.toolboxes["clickup"].tools] == [True, True, False]
    reading = await call(kernel, "searchClickUpTasks", {"query": "checkout"})
    assert reading.success, "reads pass the policy"


async def test_errors_are_results(kernel, connection, clickup):
    both = await call(kernel, "writeClickUpTask", {"task": "86c1", "list": "901"})
    assert not both.success and both.error_details.field == "task"
    missing = await call(kernel, "readClickUpTask", {"task": "86zz"})
    assert not missing.success and missing.error_details.code == "NOT_FOUND"
    bad_status = await call(kernel, "writeClickUpTask", {"task": "86c1", "status": "Archived"})
    assert not bad_status.success and bad_status.error_details.code == "BAD_REQUEST"
    backwards = await call(
        kernel, "searchClickUpTasks", {"dueFrom": "2026-01-11", "dueTo": "2026-01-05"}
    )
    assert not backwards.success and backwards.error_details.field == "dueFrom"
    stranger = await call(kernel, "searchClickUpTasks", {"query": "x"}, user="mallory")
    assert stranger.error_details.code == "NOT_AVAILABLE"
