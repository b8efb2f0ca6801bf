"""The three Jira tools over the Jira connector and the fake site, called as a run calls
them (through the tool registry and the before-tool-call hooks)."""

from __future__ import annotations

import functools

from nyla.testing import call_tool

from .conftest import USER

call = functools.partial(call_tool, user=USER)


async def test_search_open_mine_due_this_week_inline(kernel, connection, jira):
    result = await call(
        kernel, "searchJiraIssues",
        {"mine": True, "openOnly": True, "dueFrom": "2026-01-05", "dueTo": "2026-01-11"},
    )  # fmt: skip
    assert result.success, result.error
    lines = result.content.splitlines()
    assert lines[0] == (
        "☑️ ED-1 Fix checkout — status To Do; assignee Mia Krystof; due 2026-01-07 [id: 10001]"
    )
    assert len([line for line in lines if line.startswith("☑️")]) == 1, "done/other/later out"
    assert "task lines are complete" in result.content
    text = await call(kernel, "searchJiraIssues", {"query": "logo", "project": "ED"})
    assert "ED-4 Update logo" in text.content and "assignee unassigned" in text.content


async def test_read_with_comments(kernel, connection, jira):
    jira.comments["ED-3"] = [fake_comment()]
    result = await call(kernel, "readJiraIssue", {"issue": "ED-3"})
    assert result.success, result.error
    assert "Main order flow broken" in result.content
    assert "- Mia Krystof (2026-01-06T10:15+00:00): Lorem ipsum dolor sit amet." in result.content


def fake_comment() -> dict:
    from .conftest import fake_jira

    return fake_jira.sample("comment")


async def test_write_updates_and_creates(kernel, connection, jira):
    done = await call(
        kernel, "writeJiraIssue", {"issue": "ED-1", "status": "Done", "comment": "Fixed"}
    )
    assert done.success, done.error
    assert "status Done" in done.content
    assert [w[0] for w in jira.writes] == ["transition", "comment"]
    new = await call(
        kernel, "writeJiraIssue", {"project": "ED", "title": "Plan Q2", "due": "2026-04-01"}
    )
    assert new.success and "ED-5 Plan Q2" in new.content and "due 2026-04-01" in new.content


async def test_writes_are_a_barrier_behind_the_policy(kernel, connection, jira, monkeypatch):
    monkeypatch.setenv("NYLA_JIRA_WRITE", "off")
    denied = await call(kernel, "writeJiraIssue", {"issue": "ED-1", "status": "Done"})
    assert not denied.success and denied.error_details.code == "DENIED"
    assert jira.writes == [], "the denied write reached Jira"
    assert [t.read_only for t in kernel.plugins.toolboxes["jira"].tools] == [True, True, False]
    reading = await call(kernel, "searchJiraIssues", {"query": "checkout"})
    assert reading.success, "reads pass the policy"


async def test_errors_are_results(kernel, connection, jira):
    both = await call(kernel, "writeJiraIssue", {"issue": "ED-1", "project": "ED"})
    assert not both.success and both.error_details.field == "issue"
    missing = await call(kernel, "readJiraIssue", {"issue": "ED-99"})
    assert not missing.success and missing.error_details.code == "NOT_FOUND"
    bad_status = await call(kernel, "writeJiraIssue", {"issue": "ED-1", "status": "Archived"})
    assert not bad_status.success and "possible:" in bad_status.error
    stranger = await call(kernel, "searchJiraIssues", {"query": "x"}, user="mallory")
    assert stranger.error_details.code == "NOT_AVAILABLE"
