"""build_agent_context: the six layers in order, budgets, dedupe, and the empty-string paths;
round and workflow memory."""

from __future__ import annotations

from sqlalchemy import select, text

from nyla.ai.tokens import count_text_tokens
from nyla.knowledge.context import LAYER_TITLES
from nyla.models.files import Scope
from nyla.models.knowledge import WorkflowEntity
from nyla.tables.knowledge import RoundMemory

from .conftest import ctx, item


def _sections(block: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in block.split("### ")[1:]:
        title, _, body = part.partition("\n")
        out[title.strip()] = body
    return out


async def _world(kernel):
    k = kernel.knowledge
    me = ctx("u1", "m1", workflow_id="wf-1")
    await k.indexing.index_file(
        item("mine", "payroll.txt"), b"Payroll runs on the 25th; salary slips by mail.", context=me
    )
    for n in range(4):
        await k.indexing.index_file(
            item(f"shared{n}", f"policy{n}.txt", scope=Scope.MANDATE),
            f"Mandate policy {n}: payroll approvals need two signatures, variant {n}.".encode(),
            context=me,
        )
    await k.indexing.index_file(
        item("foreign", "x.txt", user="u9", mandate="m9"),
        b"payroll of another company",
        context=ctx("u9", "m9"),
    )
    await k.record_round(
        run_id="r1",
        round=1,
        context=me,
        file_refs=["file:mine", "file:shared0"],
        tool_results=[{"tool": "readFile", "ok": True}],
        decisions=["check the payroll date"],
    )
    await k.memory.remember("client", {"name": "Bäckerei Huber", "city": "Zürich"}, context=me)
    other = ctx("u1", "m1", workflow_id="wf-0")
    await k.record_round(
        run_id="r0", round=1, context=other, decisions=["payroll questions answered last week"]
    )
    return me


async def test_layers_in_the_seeds_order_deduplicated(kernel):
    me = await _world(kernel)
    kernel.knowledge.settings.context_k = 2
    kernel.knowledge.settings.cross_workflow_hints = True
    block = await kernel.knowledge.build_agent_context("When does payroll run?", me)
    assert block.startswith("## Knowledge context")
    sections = _sections(block)
    assert list(sections) == list(LAYER_TITLES)  # every layer present, in order
    positions = [block.index(f"### {t}") for t in LAYER_TITLES]
    assert positions == sorted(positions)
    assert "file:mine" in sections["Known files"]
    assert "check the payroll date" in sections["Earlier in this workflow"]
    assert "Bäckerei Huber" in sections["Workflow entities"]
    assert "payroll questions answered last week" in sections["Hints from other workflows"]
    assert "another company" not in block  # scope isolation holds in the context too
    # dedupe: no chunk line appears in two layers
    lines = [ln.split("] ", 1)[-1] for ln in block.splitlines() if ln.startswith("[")]
    assert len(lines) == len(set(lines))
    assert sections["Shared mandate knowledge"].strip()


async def test_budgets_cap_each_layer(kernel):
    me = await _world(kernel)
    kernel.knowledge.settings.budgets.semantic = 25
    block = await kernel.knowledge.build_agent_context("payroll", me)
    semantic = _sections(block)["Relevant knowledge"]
    assert 0 < count_text_tokens(semantic) <= 25 + 5


async def test_no_workflow_no_round_layers_and_hints_off_by_default(kernel):
    await _world(kernel)
    block = await kernel.knowledge.build_agent_context("payroll", ctx("u1", "m1"))
    sections = _sections(block)
    assert "Known files" not in sections and "Hints from other workflows" not in sections
    assert "Relevant knowledge" in sections


async def test_empty_string_when_embedding_fails(kernel, embedder):
    me = await _world(kernel)
    embedder.fail = True
    assert await kernel.knowledge.build_agent_context("payroll", me) == ""


async def test_empty_string_when_the_database_fails(kernel):
    me = await _world(kernel)
    async with kernel.db.session() as s:
        await s.execute(text("ALTER TABLE knowledge_round_memory RENAME COLUMN summary TO gone"))
    assert await kernel.knowledge.build_agent_context("payroll", me) == ""


async def test_round_memory_written_without_embedding_when_embedding_fails(kernel, embedder):
    me = ctx("u1", "m1", workflow_id="wf-2")
    embedder.fail = True
    await kernel.knowledge.record_round(
        run_id="r", round=3, context=me, file_refs=["file:a"], tool_results=["done"], decisions=[]
    )
    async with kernel.db.session() as s:
        row = (await s.execute(select(RoundMemory))).scalar_one()
    assert row.round == 3 and row.embedding is None and row.file_refs == ["file:a"]
    assert row.workflow_id == "wf-2" and "result: done" in row.summary
    embedder.fail = False
    block = await kernel.knowledge.build_agent_context("anything", me)
    assert "file:a" in _sections(block)["Known files"]


async def test_workflow_memory_upserts_per_key(kernel):
    me = ctx("u1", "m1", workflow_id="wf-3")
    await kernel.knowledge.memory.remember("deadline", "2025-03-31", context=me)
    await kernel.knowledge.memory.remember(
        "deadline", "2025-04-30", context=me, kind="fact", embed=True
    )
    assert await kernel.knowledge.memory.workflow_entities(me) == [
        WorkflowEntity(key="deadline", kind="fact", value="2025-04-30")
    ]
    assert (
        await kernel.knowledge.memory.workflow_entities(ctx("u1", "m1", workflow_id="wf-4")) == []
    )
