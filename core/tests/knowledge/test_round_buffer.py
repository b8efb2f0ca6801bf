"""Round memory of an agent run: written round by round when the run's context reads it
back (a workflow, cross-workflow hints), held and written at once when the run ends
otherwise (one embedding call, one insert)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select, text

from nyla.agent.spec import RunSpec
from nyla.knowledge.remembering import RoundBuffer
from nyla.models.agent import AgentConfig, EventType, RoundToolResult
from nyla.models.ai import ToolCall
from nyla.models.tools import Tool
from nyla.tables.knowledge import RoundMemory

from .conftest import NeutralizerPlugin, ctx

pytestmark = pytest.mark.db


def _kernel(db, make_kernel, scripted, embedder):
    def script(request: Any, index: int) -> Any:
        if index < 2:
            return [ToolCall(id=f"c{index}", name="note", arguments=f'{{"n": {index}}}')]
        return "done"

    provider = scripted(script, embed_fn=embedder)
    return make_kernel(provider, NeutralizerPlugin(), db=db, builtins=False)


async def _rows(kernel) -> int:
    async with kernel.db.session() as s:
        return (await s.execute(select(func.count()).select_from(RoundMemory))).scalar_one()


async def _run(kernel, context) -> tuple[list[int], list[list[str]]]:
    """Run two tool rounds and a final one; (rows seen by each tool call, embedding calls)."""
    seen: list[int] = []
    calls: list[list[str]] = []
    embed, embed_rows = kernel.ai.embed, kernel.ai.embed_rows

    async def counting_embed(texts: list[str], **kw: Any) -> Any:
        calls.append(list(texts))
        return await embed(texts, **kw)

    async def counting_embed_rows(texts: list[str], **kw: Any) -> Any:
        calls.append(list(texts))
        return await embed_rows(texts, **kw)

    kernel.ai.embed, kernel.ai.embed_rows = counting_embed, counting_embed_rows

    async def note(ctx: Any, n: int) -> str:
        seen.append(await _rows(kernel))
        return f"noted {n}"

    tool = Tool.from_function(note, name="note", description="note", read_only=True)
    spec = RunSpec("remember this", AgentConfig(stream=False), context, tools=[tool])
    final = [e async for e in kernel.agent.execute(spec) if e.type is EventType.FINAL]
    assert final[0].data["status"] == "completed"
    return seen, calls


async def test_a_run_without_a_workflow_writes_its_rounds_at_the_end(
    db, make_kernel, scripted, embedder
):
    kernel = _kernel(db, make_kernel, scripted, embedder)
    seen, calls = await _run(kernel, ctx("u1", "m1"))
    assert seen == [0, 0]  # nothing written while the run goes on
    async with kernel.db.session() as s:
        rows = (await s.execute(select(RoundMemory).order_by(RoundMemory.round))).scalars().all()
    assert [(r.round, r.workflow_id) for r in rows] == [(1, None), (2, None)]
    assert all(r.embedding is not None for r in rows)
    assert "note: noted 1" in rows[1].summary
    summaries = [texts for texts in calls if any(t.startswith("note: ") for t in texts)]
    assert len(summaries) == 1 and len(summaries[0]) == 2  # one call for both rounds


async def test_a_run_in_a_workflow_writes_each_round_before_the_next(
    db, make_kernel, scripted, embedder
):
    kernel = _kernel(db, make_kernel, scripted, embedder)
    seen, _ = await _run(kernel, ctx("u1", "m1", workflow_id="wf"))
    assert seen == [0, 1]  # round 1 is in memory when round 2's tool runs
    assert await _rows(kernel) == 2


def test_the_recorder_is_chosen_by_what_the_run_reads_back(kernel):
    knowledge = kernel.knowledge
    assert isinstance(knowledge.round_recorder(ctx("u1", "m1")), RoundBuffer)
    assert not isinstance(knowledge.round_recorder(ctx(workflow_id="wf")), RoundBuffer)
    knowledge.settings.cross_workflow_hints = True
    assert not isinstance(knowledge.round_recorder(ctx("u1", "m1")), RoundBuffer)


async def test_a_failed_flush_is_logged_and_keeps_nothing(kernel, caplog):
    me = ctx("u1", "m1")
    buffer = kernel.knowledge.round_recorder(me)
    await buffer(run_id="r", round=1, context=me, tool_results=["x"])
    async with kernel.db.session() as s:
        await s.execute(text("ALTER TABLE knowledge_round_memory RENAME COLUMN summary TO gone"))
    await buffer.flush()
    assert "round memory of 1 rounds not written" in caplog.text
    assert buffer.rounds == []


async def test_a_recurring_summary_is_embedded_once_and_every_round_keeps_it(kernel, embedder):
    me = ctx("u1", "m1")
    buffer = kernel.knowledge.round_recorder(me)
    polled = [RoundToolResult("poll", True, "still running")]
    for n in (1, 2, 3):
        await buffer(run_id="r", round=n, context=me, tool_results=polled)
    await buffer(
        run_id="r", round=4, context=me, tool_results=[RoundToolResult("poll", True, "done")]
    )
    embedder.texts.clear()
    await buffer.flush()
    assert len(embedder.texts) == 2  # the three equal rounds once, the last one
    async with kernel.db.session() as s:
        rows = (await s.execute(select(RoundMemory).order_by(RoundMemory.round))).scalars().all()
    assert [r.round for r in rows] == [1, 2, 3, 4]
    vectors = [list(r.embedding) for r in rows]
    assert vectors[0] == vectors[1] == vectors[2] != vectors[3]


async def test_a_round_held_past_the_hold_time_is_written_with_the_next(kernel):
    me = ctx("u1", "m1")
    held = RoundBuffer(kernel.knowledge.memory)
    await held(run_id="r", round=1, context=me, tool_results=["x"])
    assert await _rows(kernel) == 0  # held until the run ends
    at_once = RoundBuffer(kernel.knowledge.memory, hold_s=0.0)
    await at_once(run_id="s", round=1, context=me, tool_results=["y"])
    assert await _rows(kernel) == 1 and at_once.rounds == []
