"""Prompt enrichment: the first model request of a run carries the metadata of the files its
prompt attaches or references — name, type, size, structure summary — only files the run may
read, a capped list with a count, the names neutralised when the run neutralises."""

from __future__ import annotations

import pytest

from nyla.agent.file_briefing import HEADING, MAX_FILES, referenced_ids
from nyla.models.agent import AgentConfig, RunContext

pytestmark = pytest.mark.db

REPORT = b"""# Quarterly report

## Revenue

| Month | CHF |
|---|---|
| Jan | 100 |

## Costs

Rent and salaries.
"""


@pytest.fixture
def kernel(make_kernel, scripted, db):
    provider = scripted(lambda request, index: "noted")
    return make_kernel(provider, db=db, settings={"ai": {"neutralize": False}}), provider


def system_text(request) -> str:
    return request.messages[0].text


async def test_the_first_request_names_the_referenced_files(kernel):
    kernel, provider = kernel
    alice = RunContext(user_id="alice")
    report = await kernel.files.save("report.md", REPORT, alice)
    table = await kernel.files.save("sales.csv", b"month,chf\njan,100\nfeb,120\n", alice)
    secret = await kernel.files.save("bob-secret.md", b"# Bob", RunContext(user_id="bob"))
    prompt = (
        f"Compare {report.id} with the sales in {table.id}; also look at {secret.id} "
        "and 00000000-0000-4000-8000-000000000000."
    )
    config = AgentConfig(model="scripted:model", max_rounds=1)
    events = [e async for e in kernel.agent.run(prompt, config, alice)]
    assert events[-1].data["status"] == "completed"
    system = system_text(provider.requests[0])
    assert HEADING in system
    line = next(x for x in system.splitlines() if x.startswith("- report.md"))
    assert report.id in line and "text/markdown" in line and f"{len(REPORT)} B" in line
    assert "sections" in line and "Quarterly report" in line  # the structure summary
    assert "- sales.csv" in system and "rows" in system
    # another user's file and an id of nothing are left out, as if they did not exist
    assert "bob-secret" not in system and secret.id not in system
    assert system.count("\n- ") == 2


async def test_many_files_are_a_capped_list_with_a_count(kernel):
    kernel, provider = kernel
    alice = RunContext(user_id="alice")
    files = [await kernel.files.save(f"note-{i:02}.txt", b"x" * i, alice) for i in range(15)]
    prompt = "Summarise " + ", ".join(f.id for f in files)
    config = AgentConfig(model="scripted:model", max_rounds=1)
    [e async for e in kernel.agent.run(prompt, config, alice)]
    system = system_text(provider.requests[0])
    listed = [x for x in system.splitlines() if x.startswith("- note-")]
    assert len(listed) == MAX_FILES
    assert f"and {15 - MAX_FILES} more files" in system
    assert len(system.split(HEADING, 1)[1]) < 4000


async def test_names_are_neutralised_when_the_run_neutralises(kernel):
    kernel, provider = kernel
    run = RunContext(user_id="alice", require_neutralization=True)
    named = await kernel.files.save("Vertrag anna.meier@example.ch.txt", b"terms", run)
    config = AgentConfig(model="scripted:model", max_rounds=1)
    [e async for e in kernel.agent.run(f"Read {named.id}", config, run)]
    system = system_text(provider.requests[0])
    assert HEADING in system and named.id in system
    assert "anna.meier@example.ch" not in system
    # the same file in a run that does not neutralise: the name as stored
    plain = RunContext(user_id="alice")
    [e async for e in kernel.agent.run(f"Read {named.id}", config, plain)]
    assert "anna.meier@example.ch" in system_text(provider.requests[-1])


async def test_a_prompt_without_ids_adds_nothing(kernel):
    kernel, provider = kernel
    config = AgentConfig(model="scripted:model", max_rounds=1)
    [e async for e in kernel.agent.run("hello", config, RunContext(user_id="alice"))]
    assert HEADING not in system_text(provider.requests[0])
    many = " ".join(f"00000000-0000-4000-8000-{i:012}" for i in range(80))
    assert len(referenced_ids(many)) == 50


async def test_the_knowledge_store_s_summary_is_used_unless_the_run_may_not_use_it(
    make_kernel, scripted, db
):
    from sqlalchemy import update

    from nyla.tables.knowledge import FileContentIndex

    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * 63 for _ in texts]

    provider = scripted(lambda request, index: "noted", embed_fn=embed)
    kernel = make_kernel(provider, db=db, settings={"ai": {"neutralize": False}})
    alice = RunContext(user_id="alice")
    report = await kernel.files.save("report.md", REPORT, alice)
    done = await kernel.knowledge.indexing.index_file(report, REPORT, context=alice)
    assert done.status == "indexed", done
    async with db.session() as s:  # a summary only the index has, to see which one is used
        await s.execute(
            update(FileContentIndex)
            .where(FileContentIndex.file_id == report.id)
            .values(object_summary="from the index")
        )
    config = AgentConfig(model="scripted:model", max_rounds=1)
    [e async for e in kernel.agent.run(f"Read {report.id}", config, alice)]
    assert "report.md" in system_text(provider.requests[-1])
    assert "from the index" in system_text(provider.requests[-1])
    await kernel.service_access.set("user", "alice", "service.knowledge", False)
    denied = await kernel.agent.user_context(alice)
    [e async for e in kernel.agent.run(f"Read {report.id}", config, denied)]
    system = system_text(provider.requests[-1])
    assert "from the index" not in system and "Quarterly report" in system


async def test_a_doc_item_reference_names_the_chat_document_s_file(kernel):
    """``docItem:<id>`` names a chat document; the block lists the file it stands for (once,
    also when the prompt names the file too), and another user's document not at all."""
    from nyla.files.bridge import attach_file_as_chat_document

    kernel, provider = kernel
    alice = RunContext(user_id="alice", workflow_id="wf-alice")
    report = await kernel.files.save("report.md", REPORT, alice)
    workflow = await kernel.files.workflows.load("wf-alice", alice)
    doc_id = await attach_file_as_chat_document(kernel.files.workflows, workflow, report)
    assert doc_id is not None and doc_id != report.id
    bob = RunContext(user_id="bob", workflow_id="wf-bob")
    secret = await kernel.files.save("bob-plan.md", b"# Plan", bob)
    bob_workflow = await kernel.files.workflows.load("wf-bob", bob)
    bob_doc = await attach_file_as_chat_document(kernel.files.workflows, bob_workflow, secret)
    assert bob_doc is not None
    config = AgentConfig(model="scripted:model", max_rounds=1)
    prompt = f"Summarise docItem:{doc_id} and docItem:{bob_doc}"
    events = [e async for e in kernel.agent.run(prompt, config, alice)]
    assert events[-1].data["status"] == "completed"
    system = system_text(provider.requests[-1])
    line = next(x for x in system.splitlines() if x.startswith("- report.md"))
    assert report.id in line and "text/markdown" in line and "Quarterly report" in line
    assert "bob-plan" not in system and secret.id not in system
    # the document and its file named together are one line
    both = f"Compare docItem:{doc_id} with {report.id}"
    [e async for e in kernel.agent.run(both, config, alice)]
    assert system_text(provider.requests[-1]).count("- report.md") == 1
