"""Workflow runs on the in-process job runtime: node by node through the action executor
with the run's identity and budget, outputs fed along connections, retries, timeouts,
cancel, stored ordered events; a workflow with problems does not start; another user's run
is not found."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from runs_probe import RunsProbe

from nyla.actions.runs import WorkflowNotRunnableError, WorkflowRunNotFoundError
from nyla.models.agent import RunContext
from nyla.models.workflow_runs import RunOptions
from nyla.models.workflows import WorkflowConnection

pytestmark = pytest.mark.db

ALICE = RunContext(user_id="alice", mandate_id="m1")
BOB = RunContext(user_id="bob", mandate_id="m1")
QUICK = RunOptions(retry_delay_s=0)


@pytest.fixture
def probe() -> RunsProbe:
    return RunsProbe()


@pytest.fixture
async def kernel(make_kernel, db, probe):
    kernel = make_kernel(probe, db=db)
    yield kernel
    await kernel.aclose()


async def chain(kernel, *steps: dict, name: str = "Chain") -> str:
    """A workflow of ``runs.step`` nodes n1 -> n2 -> ..., each feeding the next's text."""
    wf = await kernel.workflows.create(name, ALICE)
    for i, parameters in enumerate(steps, start=1):
        await kernel.workflows.add_node(wf.id, "runs", "step", parameters, ALICE, node_id=f"n{i}")
        if i > 1:
            link = WorkflowConnection(from_node=f"n{i - 1}", to_node=f"n{i}", to_parameter="text")
            await kernel.workflows.connect(wf.id, link, ALICE)
    return wf.id


async def test_a_run_executes_every_node_in_order_feeding_outputs(kernel, probe):
    wf = await chain(kernel, {"label": "a"}, {"label": "b"}, {"label": "c"})
    started = await kernel.workflow_runs.start(wf, ALICE, QUICK)
    assert started.status in ("queued", "running") and started.job_id
    run = await asyncio.wait_for(kernel.workflow_runs.wait(started.id, ALICE), 120)
    assert run.status == "done", run
    assert probe.calls == ["a", "b", "c"]
    assert [(n.node_id, n.status, n.attempts) for n in run.nodes] == [
        ("n1", "done", 1),
        ("n2", "done", 1),
        ("n3", "done", 1),
    ]
    assert run.nodes[1].inputs == {"label": "b", "text": "a()"}
    assert run.nodes[2].output.text == "c(b(a()))"
    assert all(n.started_at <= n.finished_at for n in run.nodes)
    assert {c.run.user_id for c in probe.contexts} == {"alice"}
    events = await kernel.workflow_runs.events(run.id, ALICE)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [(e.type, e.node_id) for e in events] == [
        ("RUN_QUEUED", None),
        ("RUN_STARTED", None),
        ("NODE_STARTED", "n1"),
        ("NODE_DONE", "n1"),
        ("NODE_STARTED", "n2"),
        ("NODE_DONE", "n2"),
        ("NODE_STARTED", "n3"),
        ("NODE_DONE", "n3"),
        ("RUN_DONE", None),
    ]
    assert run.last_event_id == len(events)
    assert (await kernel.workflow_runs.events(run.id, ALICE, after=7))[0].type == "NODE_DONE"
    job = await kernel.jobs.store.get(run.job_id)
    assert (job.kind, job.status) == ("workflow", "done")


async def test_a_failing_node_is_retried_then_fails_the_run(kernel, probe):
    wf = await chain(kernel, {"label": "a", "failTimes": 1}, {"label": "b", "failTimes": 5})
    run = await asyncio.wait_for(
        kernel.workflow_runs.wait((await kernel.workflow_runs.start(wf, ALICE, QUICK)).id, ALICE),
        120,
    )
    assert run.status == "failed" and "node 'n2' failed" in run.error
    assert probe.calls == ["a", "a", "b", "b"]
    first, second = run.nodes
    assert (first.status, first.attempts) == ("done", 2)
    assert (second.status, second.attempts, second.error_code) == ("failed", 2, "ACTION_FAILED")
    kinds = [e.type for e in await kernel.workflow_runs.events(run.id, ALICE)]
    assert kinds.count("NODE_RETRY") == 2 and kinds[-2:] == ["NODE_FAILED", "RUN_FAILED"]


async def test_downstream_nodes_are_skipped_after_a_failure(kernel, probe):
    wf = await chain(kernel, {"label": "a", "failTimes": 9}, {"label": "b"})
    options = RunOptions(max_attempts=1, retry_delay_s=0)
    run = await asyncio.wait_for(
        kernel.workflow_runs.wait((await kernel.workflow_runs.start(wf, ALICE, options)).id, ALICE),
        120,
    )
    assert [n.status for n in run.nodes] == ["failed", "skipped"] and probe.calls == ["a"]


async def test_a_node_past_its_deadline_times_out(kernel, probe, tmp_path):
    probe.folder = tmp_path
    (tmp_path / "block").touch()  # the node waits until the file goes: it never does here
    wf = await chain(kernel, {"label": "slow", "block": True})
    options = RunOptions(max_attempts=2, node_timeout_s=0.2, retry_delay_s=0)
    run = await asyncio.wait_for(
        kernel.workflow_runs.wait((await kernel.workflow_runs.start(wf, ALICE, options)).id, ALICE),
        120,
    )
    node = run.nodes[0]
    assert (node.status, node.error_code, node.attempts) == ("failed", "TIMEOUT", 2)
    assert "longer than 0.2 s" in node.error


async def test_cancel_stops_the_node_under_way_and_the_rest(kernel, probe, tmp_path):
    probe.folder = tmp_path
    (tmp_path / "block").touch()
    wf = await chain(kernel, {"label": "a"}, {"label": "wait", "block": True}, {"label": "c"})
    kernel.workflow_runs.engine.cancel_poll_s = 0.05
    run = await kernel.workflow_runs.start(wf, ALICE, QUICK)
    await asyncio.wait_for(probe.started.wait(), 60)
    with pytest.raises(WorkflowRunNotFoundError):
        await kernel.workflow_runs.cancel(run.id, BOB)
    assert await kernel.workflow_runs.cancel(run.id, ALICE) is True
    ended = await asyncio.wait_for(kernel.workflow_runs.wait(run.id, ALICE), 120)
    for _ in range(200):  # the stopped attempt records its end after the run's
        ended = await kernel.workflow_runs.get(run.id, ALICE)
        if ended.nodes[1].error_code == "CANCELLED":
            break
        await asyncio.sleep(0.05)
    assert ended.status == "cancelled"
    assert [n.status for n in ended.nodes] == ["done", "cancelled", "cancelled"]
    assert probe.calls == ["a", "wait"], "the node after the cancel ran"
    assert await kernel.workflow_runs.cancel(run.id, ALICE) is False
    assert (await kernel.workflow_runs.events(run.id, ALICE))[-1].type == "RUN_CANCELLED"


async def test_the_budget_is_the_runs_and_stops_it(kernel, probe):
    wf = await chain(
        kernel, {"label": "a", "charge": 0.6}, {"label": "b", "charge": 0.6}, {"label": "c"}
    )
    options = RunOptions(max_cost_chf=1.0, retry_delay_s=0, model="scripted-model")
    run = await asyncio.wait_for(
        kernel.workflow_runs.wait((await kernel.workflow_runs.start(wf, ALICE, options)).id, ALICE),
        120,
    )
    assert run.status == "failed" and "budget" in run.error
    assert run.cost_chf == pytest.approx(1.2)
    assert probe.calls == ["a", "b"]
    assert [c.remaining_budget_chf for c in probe.contexts] == pytest.approx([1.0, 0.4])
    assert {c.model for c in probe.contexts} == {"scripted-model"}


async def test_a_workflow_with_problems_does_not_start(kernel):
    wf = await kernel.workflows.create("Broken", ALICE)
    await kernel.workflows.add_node(wf.id, "runs", "step", {}, ALICE)
    with pytest.raises(WorkflowNotRunnableError, match="'label' is neither set") as caught:
        await kernel.workflow_runs.start(wf.id, ALICE)
    assert caught.value.problems[0].code == "MISSING_PARAMETER"
    assert await kernel.workflow_runs.list_for(ALICE) == []


async def test_another_users_run_is_not_found(kernel):
    wf = await chain(kernel, {"label": "a"})
    run = await asyncio.wait_for(
        kernel.workflow_runs.wait((await kernel.workflow_runs.start(wf, ALICE, QUICK)).id, ALICE),
        120,
    )
    with pytest.raises(WorkflowRunNotFoundError):
        await kernel.workflow_runs.get(run.id, BOB)
    with pytest.raises(WorkflowRunNotFoundError):
        await kernel.workflow_runs.events(run.id, BOB)
    assert await kernel.workflow_runs.list_for(BOB) == []
    assert [r.id for r in await kernel.workflow_runs.list_for(ALICE, workflow_id=wf)] == [run.id]


async def test_a_run_on_a_silent_far_worker_goes_on_after_the_zombie_killer(kernel, probe, db):
    """A run held by a worker on another host is left alone while its job beats; once the
    zombie killer ends the silent job, the recoveries pick the run up here."""
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import update

    from nyla.actions.runs import run_order
    from nyla.jobs.tables import Job
    from nyla.tables.workflow_runs import WorkflowRunRow

    wf_id = await chain(kernel, {"label": "a"}, {"label": "b"})
    graph = await kernel.workflows.get(wf_id, ALICE)
    runs = kernel.workflow_runs
    run = await runs.store.create("far-run", graph, run_order(graph), ALICE, QUICK)
    far = "far-host.example:4242"
    job_id = await kernel.jobs.store.start("workflow", user_id="alice", worker=far)
    async with db.session() as s:
        await s.execute(
            update(WorkflowRunRow)
            .where(WorkflowRunRow.id == run.id)
            .values(status="running", worker=far, job_id=job_id)
        )
    assert await runs.resume_interrupted() == [], "a beating far worker's run was taken"
    async with db.session() as s:
        await s.execute(
            update(Job)
            .where(Job.id == job_id)
            .values(heartbeat_at=datetime.now(UTC) - timedelta(hours=1))
        )
    assert await kernel.jobs._kill_zombies() == 1
    ended = await asyncio.wait_for(runs.wait(run.id, ALICE), 120)
    assert ended.status == "done" and probe.calls == ["a", "b"]
    assert ended.job_id != job_id and ended.resumes == 0


async def test_a_stored_event_wakes_the_followers_of_its_run(kernel):
    """Each event is announced on the run bus at commit: a follower wakes at once instead of
    waiting for its next read."""
    runs = kernel.workflow_runs
    bus = kernel.runs.bus
    assert await bus.wait_connected(30)
    wf = await chain(kernel, {"label": "a"})
    graph = await kernel.workflows.get(wf, ALICE)
    with bus.subscribe("woken-run") as wake:
        await runs.store.create("woken-run", graph, ["n1"], ALICE, QUICK)
        await asyncio.wait_for(wake.wait(), 30)
        wake.clear()
        assert await runs.store.finish("woken-run", "cancelled", "test")
        await asyncio.wait_for(wake.wait(), 30)
    assert [e.type for e in await runs.store.events("woken-run")] == [
        "RUN_QUEUED",
        "RUN_CANCELLED",
    ]
