"""Writing one round's memory: every field stored storable, and the commit that skips the
WAL flush stays local to its own transaction (the pooled connection it ran on waits for the
disk again)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from nyla.knowledge import memory
from nyla.models.agent import RoundToolResult, RunContext
from nyla.tables.knowledge import RoundMemory

pytestmark = pytest.mark.db


async def test_a_round_is_stored_whole_and_the_fast_commit_does_not_leak(db) -> None:
    context = RunContext(user_id="ada", mandate_id="m1", workflow_id="wf")
    row = memory.round_row(
        run_id="run-1",
        round=3,
        context=context,
        file_refs=["file:a\x00"],
        tool_results=[RoundToolResult("read", True, "ok\x00")],
        decisions=["go on"],
        summary="decision: go on",
        model="local:hash-8",
        vector=[0.5] * 8,
    )
    await memory.insert_rounds(db, [row])
    # the next statement, on the same pooled connection (the pool hands out the last one
    # returned), waits for the disk again
    assert await db.read_driver(lambda c: c.rows("SHOW synchronous_commit")) == [("on",)]
    # (what the write's statement does: the setting holds in its own transaction only)
    local = "SELECT set_config('synchronous_commit', 'off', true), current_setting('synchronous_commit')"
    assert await db.read_driver(lambda c: c.rows(local)) == [("off", "off")]
    assert await db.read_driver(lambda c: c.rows("SHOW synchronous_commit")) == [("on",)]
    async with db.session() as s:
        row = (await s.execute(select(RoundMemory))).scalar_one()
    assert (row.run_id, row.round, row.workflow_id) == ("run-1", 3, "wf")
    assert row.scope_key == memory.scope_key(context)
    assert row.file_refs == ["file:a\ufffd"]
    assert row.tool_results == [{"toolName": "read", "success": True, "content": "ok\ufffd"}]
    assert row.decisions == ["go on"] and row.embedding_model == "local:hash-8"
    assert [float(x) for x in row.embedding] == [0.5] * 8


async def test_a_round_without_a_vector_is_stored_without_a_model(db) -> None:
    row = memory.round_row(
        run_id="run-2",
        round=1,
        context=RunContext(),
        file_refs=[],
        tool_results=[],
        decisions=[],
        summary="",
        model="local:hash-8",
        vector=None,
    )
    await memory.insert_rounds(db, [row])
    async with db.session() as s:
        row = (await s.execute(select(RoundMemory))).scalar_one()
    assert row.embedding is None and row.embedding_model is None and row.workflow_id is None


async def test_many_rounds_keep_their_own_vectors_and_order(db) -> None:
    context = RunContext(user_id="ada")
    rows = [
        memory.round_row(
            run_id="run-3",
            round=n,
            context=context,
            file_refs=[f"file:{n}"],
            tool_results=[RoundToolResult("read", n % 2 == 0, f'read {n} "é" \\')],
            decisions=[],
            summary=f"result {n}",
            model="local:hash-4",
            vector=None if n == 3 else [float(n), -0.5, 0.25, 1e-3],
        )
        for n in range(1, 6)
    ]
    await memory.insert_rounds(db, rows)
    async with db.session() as s:
        stored = (await s.execute(select(RoundMemory).order_by(RoundMemory.round))).scalars()
        stored = list(stored)
    assert [r.round for r in stored] == [1, 2, 3, 4, 5]
    assert [r.file_refs for r in stored] == [[f"file:{n}"] for n in range(1, 6)]
    assert stored[1].tool_results == [
        {"toolName": "read", "success": True, "content": 'read 2 "é" \\'}
    ]
    assert stored[2].embedding is None and stored[2].embedding_model is None
    for n in (1, 2, 4, 5):
        row = stored[n - 1]
        assert [float(x) for x in row.embedding] == pytest.approx([n, -0.5, 0.25, 1e-3])
        assert row.embedding_model == "local:hash-4" and row.summary == f"result {n}"


def test_a_round_summary_is_plain_lines_each_result_under_its_tool() -> None:
    results = [
        RoundToolResult("read_file", True, "Invoice 17 is due\x00"),
        RoundToolResult("send_mail", False, "x" * (memory.TOOL_RESULT_CHARS + 50)),
        "done",
    ]
    summary = memory.round_summary(["file:a", "file:b"], results, ["look it up"])
    assert summary.split("\n") == [
        "decision: look it up",
        "read_file: Invoice 17 is due\ufffd",
        "send_mail failed: " + "x" * memory.TOOL_RESULT_CHARS,
        "result: done",
        "files: file:a, file:b",
    ]
    # no JSON around a result: its keys and quotes were most of a short result's tokens
    assert "toolName" not in summary and "{" not in summary


async def test_every_column_is_stored_from_its_place_in_the_rows_document(db) -> None:
    context = RunContext(user_id="ada", mandate_id="m1", feature_instance_id="fi", workflow_id="wf")
    row = memory.round_row(
        run_id="run-4",
        round=7,
        context=context,
        file_refs=["file:é"],
        tool_results=[
            RoundToolResult("réad\x00", False, "\ud800 ok"),
            RoundToolResult("write", True, "done"),
        ],
        decisions=[{"why": "é"}],
        summary="write: done",
        model="local:hash-2",
        vector=[1.0, 2.0],
    )
    await memory.insert_rounds(db, [row])
    async with db.session() as s:
        stored = (await s.execute(select(RoundMemory))).scalar_one()
    assert {c: getattr(stored, c) for c in memory.ROUND_COLUMNS[:-1]} == {
        "scope_key": memory.scope_key(context),
        "run_id": "run-4",
        "workflow_id": "wf",
        "round": 7,
        "user_id": "ada",
        "mandate_id": "m1",
        "feature_instance_id": "fi",
        "file_refs": ["file:é"],
        "tool_results": [
            {"toolName": "réad\ufffd", "success": False, "content": "\ufffd ok"},
            {"toolName": "write", "success": True, "content": "done"},
        ],
        "decisions": [{"why": "é"}],
        "summary": "write: done",
        "embedding_model": "local:hash-2",
    }
