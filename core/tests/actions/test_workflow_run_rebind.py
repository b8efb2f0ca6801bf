"""A workflow node run again after its worker died between binding its documents and being
recorded done binds them once: its message is bound under an id of (run, node), and the
second binding replaces the first, so the conversation holds each node's documents once."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from runs_probe import RunsProbe

from nyla.actions.runs import run_order
from nyla.jobs.store import this_worker
from nyla.models.agent import RunContext
from nyla.models.workflow_runs import RunOptions
from nyla.models.workflows import WorkflowConnection

pytestmark = pytest.mark.db

ALICE = RunContext(user_id="alice", mandate_id="m1", workflow_id="conv-rebind")


class WorkerDied(BaseException):
    """The process ends here (not an exception the engine would handle)."""


@pytest.fixture
def probe() -> RunsProbe:
    return RunsProbe()


@pytest.fixture
async def kernel(make_kernel, db, probe):
    kernel = make_kernel(probe, db=db)
    yield kernel
    await kernel.aclose()


async def test_a_node_run_again_after_a_crash_binds_its_documents_once(kernel, probe, monkeypatch):
    wf = await kernel.workflows.create("Twice", ALICE)
    for node_id, label in (("n1", "a"), ("n2", "b")):
        parameters = {"label": label, "save": True}
        await kernel.workflows.add_node(wf.id, "runs", "step", parameters, ALICE, node_id=node_id)
    link = WorkflowConnection(from_node="n1", to_node="n2", to_parameter="text")
    await kernel.workflows.connect(wf.id, link, ALICE)
    graph = await kernel.workflows.get(wf.id, ALICE)
    runs, run_id = kernel.workflow_runs, uuid.uuid4().hex
    await runs.store.create(run_id, graph, run_order(graph), ALICE, RunOptions(retry_delay_s=0))

    async def dies(*args, **kwargs):
        raise WorkerDied  # after n1's documents were bound, before n1 is recorded done

    monkeypatch.setattr(runs.store, "node_done", dies)
    with pytest.raises(WorkerDied):
        await runs.engine.execute(run_id, this_worker())
    crashed = await kernel.files.workflows.load("conv-rebind", ALICE)
    assert [d.file_name for d in crashed.documents()] == ["a.txt"]
    assert (await runs.store.get(run_id)).nodes[0].status == "running"

    monkeypatch.undo()  # the next process: the run goes on, n1 runs again
    assert await asyncio.wait_for(runs.engine.execute(run_id, this_worker()), 120) == "done"
    assert probe.calls == ["a", "a", "b"]
    run = await runs.store.get(run_id)
    assert run.resumes == 1 and [n.status for n in run.nodes] == ["done", "done"]
    chat = await kernel.files.workflows.load("conv-rebind", ALICE)
    documents = chat.documents()
    assert [(d.file_name, d.action_number) for d in documents] == [("a.txt", 1), ("b.txt", 2)]
    assert len([m for m in chat.messages if m.documents]) == 2
    listed = [n.output.data["documents"][0] for n in run.nodes]
    assert [d["documentRef"] for d in listed] == [f"docItem:{d.id}" for d in documents]
    assert documents[0].file_id != crashed.documents()[0].file_id  # the second attempt's file
