"""The context builder of one agent run: the same block as build_agent_context, with the
run's prompt embedded once instead of every round."""

from __future__ import annotations

import pytest

from .conftest import ctx, item

pytestmark = pytest.mark.db


async def test_a_run_embeds_its_prompt_once_and_builds_the_same_block(kernel, embedder):
    me = ctx("u1", "m1")
    await kernel.knowledge.indexing.index_file(
        item("mine", "payroll.txt"), b"Payroll runs on the 25th; salary slips by mail.", context=me
    )
    expected = await kernel.knowledge.build_agent_context("when is payroll?", me)
    assert "payroll.txt" in expected
    embedder.texts.clear()

    used: list = []
    build = kernel.knowledge.agent_context_builder(used)
    blocks = [await build("when is payroll?", me) for _ in range(3)]
    assert blocks == [expected] * 3
    assert embedder.texts == ["when is payroll?"]
    assert {hit.file_id for hit in used} == {"mine"}

    assert "payroll.txt" in await build("salary slips", me)  # another prompt: embedded anew
    assert embedder.texts == ["when is payroll?", "salary slips"]
    # another run's builder keeps nothing of this one's
    await kernel.knowledge.agent_context_builder([])("when is payroll?", me)
    assert embedder.texts[-1] == "when is payroll?" and len(embedder.texts) == 3


async def test_a_failed_embedding_is_tried_again_next_round(kernel, embedder):
    build = kernel.knowledge.agent_context_builder([])
    embedder.texts.clear()
    embedder.fail = True
    assert await build("payroll", ctx("u1", "m1")) == ""
    embedder.fail = False
    await build("payroll", ctx("u1", "m1"))
    assert embedder.texts[-1:] == ["payroll"] and embedder.texts.count("payroll") == 1
