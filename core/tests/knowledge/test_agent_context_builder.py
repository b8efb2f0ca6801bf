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


def _count_searches(kernel) -> list[int]:
    count = [0]
    search = kernel.knowledge.retrieval.search

    async def counting(query):
        count[0] += 1
        return await search(query)

    kernel.knowledge.retrieval.search = counting
    return count


async def test_without_memory_layers_the_block_is_built_again_only_after_a_write(kernel):
    me = ctx("u1", "m1")
    k = kernel.knowledge
    await k.indexing.index_file(item("a", "payroll.txt"), b"Payroll runs on the 25th.", context=me)
    searches = _count_searches(kernel)
    build = k.agent_context_builder([])
    first = await build("payroll", me)
    for _ in range(3):
        assert await build("payroll", me) == first
    # the first build's reads may advance the WAL once (hint bits); then nothing moves it
    assert searches[0] <= 2 * 2  # semantic + mandate layer per build

    settled = searches[0]
    await build("payroll", me)
    assert searches[0] == settled
    await k.indexing.index_file(
        item("b", "payroll-2.txt"), b"Payroll of December runs on the 20th.", context=me
    )
    block = await build("payroll", me)  # someone wrote: built again, the new file in it
    assert searches[0] > settled and "payroll-2.txt" in block


async def test_with_a_workflow_or_without_any_change_signal_it_builds_every_time(
    kernel, monkeypatch
):
    me = ctx("u1", "m1", workflow_id="wf")
    await kernel.knowledge.indexing.index_file(
        item("a", "payroll.txt"), b"Payroll runs on the 25th.", context=me
    )
    searches = _count_searches(kernel)
    build = kernel.knowledge.agent_context_builder([])
    await build("payroll", me)
    per_build = searches[0]
    await build("payroll", me)
    assert searches[0] == 2 * per_build

    from nyla.knowledge import context as module

    async def no_position(db):
        return None

    monkeypatch.setattr(module, "wal_position", no_position)
    kernel.knowledge.settings.context_notify = False  # no change notifications either
    plain = ctx("u1", "m1")
    build = kernel.knowledge.agent_context_builder([])
    before = searches[0]
    await build("payroll", plain)
    await build("payroll", plain)
    assert searches[0] - before == 2 * per_build


async def test_a_run_neutralizes_its_prompt_once_for_its_context_and_its_model(
    db, make_kernel, scripted, embedder, monkeypatch
):
    from nyla.models.agent import AgentConfig, EventType

    from .conftest import NeutralizerPlugin, RegexNeutralizer

    requests: list = []

    def script(request, index):
        requests.append(request)
        return "done"

    kernel = make_kernel(scripted(script, embed_fn=embedder), NeutralizerPlugin(), db=db)
    me = ctx("u1", "m1")
    await kernel.knowledge.indexing.index_file(
        item("mine", "payroll.txt"), b"Payroll runs on the 25th; salary slips by mail.", context=me
    )
    scanned: list[str] = []
    find = RegexNeutralizer.find
    monkeypatch.setattr(
        RegexNeutralizer, "find", lambda self, t: scanned.append(t) or find(self, t)
    )
    embedder.texts.clear()
    prompt = "when is payroll? ask ada@example.org"
    events = [e async for e in kernel.agent.run(prompt, AgentConfig(stream=False), me)]
    assert next(e for e in events if e.type is EventType.FINAL).data["status"] == "completed"
    # the context's embedding and the model call share the run's placeholders: the prompt
    # went through the detectors once, and both got the same placeholder
    assert scanned.count(prompt) == 1
    assert embedder.texts[0] == "when is payroll? ask [EMAIL_1]"
    sent = [m.text for m in requests[0].messages if m.role.value == "user"]
    assert sent == ["when is payroll? ask [EMAIL_1]"]
