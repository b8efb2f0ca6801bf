"""A workflow run whose process is killed in the middle goes on when a process starts again,
without repeating a finished node — with two processes, as the sync recovery test does:
``nyla workflows run`` killed and ``nyla workflows resume`` (in-process jobs), and a
``nyla worker`` killed and another started (``NYLA_JOBS=procrastinate``)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from runs_probe import RunsProbe

from nyla.models.agent import RunContext
from nyla.models.workflows import WorkflowConnection
from nyla.testing import open_database, plugin_kernel

pytestmark = pytest.mark.db

RITA = RunContext(user_id="rita")
CHILD = Path(__file__).with_name("workflow_child.py")


async def three_steps(kernel) -> str:
    """a -> wait (blocks while the block file exists) -> c."""
    wf = await kernel.workflows.create("Recover", RITA)
    steps = [{"label": "a"}, {"label": "wait", "block": True}, {"label": "c"}]
    for i, parameters in enumerate(steps, start=1):
        await kernel.workflows.add_node(wf.id, "runs", "step", parameters, RITA, node_id=f"n{i}")
    for i in (2, 3):
        link = WorkflowConnection(from_node=f"n{i - 1}", to_node=f"n{i}", to_parameter="text")
        await kernel.workflows.connect(wf.id, link, RITA)
    return wf.id


def child(folder: Path, env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(folder), *args],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def until_node_runs(kernel, node_id: str, log: Path, label: str, seconds: float = 240) -> str:
    """The id of the user's run once ``node_id`` of it is running and its step has been
    called (``label`` in the probe's ``log``): the status is written before the step starts,
    and a kill or cancel in between would find the node running but never called."""
    for _ in range(int(seconds * 10)):
        for run in await kernel.workflow_runs.list_for(RITA):
            if any(n.node_id == node_id and n.status == "running" for n in run.nodes) and (
                log.exists() and label in log.read_text().split()
            ):
                return run.id
        await asyncio.sleep(0.1)
    raise AssertionError(f"node {node_id} never started")


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)


def check_resumed(run, events, calls: list[str]) -> None:
    assert run.status == "done", (run.status, run.error)
    assert calls == ["a", "wait", "wait", "c"], "a finished node ran again (or one was lost)"
    assert [(n.node_id, n.status, n.attempts) for n in run.nodes] == [
        ("n1", "done", 1),
        ("n2", "done", 2),
        ("n3", "done", 1),
    ]
    assert run.nodes[2].output.text == "c(wait(a()))"
    kinds = [e.type for e in events]
    assert kinds.count("RUN_STARTED") == 1 and kinds.count("RUN_RESUMED") == 1
    assert kinds.count("NODE_DONE") == 3 and kinds[-1] == "RUN_DONE"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert run.resumes == 1


async def test_a_killed_cli_run_is_resumed_without_repeating_nodes(db, tmp_path) -> None:
    env = {
        "NYLA_DATABASE_URL": db.url,
        "NYLA_DATABASE_SCHEMA": db.schema,
        "NYLA_USER": "rita",
        "NYLA_HOME": str(tmp_path / "home"),
        "NYLA_CONFIG": str(tmp_path / "none.toml"),
        "NYLA_JOBS": "inprocess",
    }
    kernel = plugin_kernel(RunsProbe(), db=db, builtins=True)
    wf = await three_steps(kernel)
    (tmp_path / "block").touch()
    first = child(tmp_path, env, "workflows", "run", wf)
    try:
        run_id = await until_node_runs(kernel, "n2", tmp_path / "calls.log", "wait")
    finally:
        kill(first)
    before = await kernel.workflow_runs.get(run_id, RITA)
    assert before.status == "running"
    assert [n.status for n in before.nodes] == ["done", "running", "pending"]
    (tmp_path / "block").unlink()
    second = child(tmp_path, env, "workflows", "resume", run_id, "--json")
    out, err = second.communicate(timeout=240)
    assert second.returncode == 0, err[-3000:]
    shown = json.loads(out)
    assert (shown["id"], shown["status"]) == (run_id, "done")
    run = await kernel.workflow_runs.get(run_id, RITA)
    events = await kernel.workflow_runs.events(run_id, RITA)
    check_resumed(run, events, (tmp_path / "calls.log").read_text().split())
    assert (await kernel.jobs.store.get(before.job_id)).status == "error"
    await kernel.aclose()


async def test_a_killed_worker_leaves_the_run_to_the_next(embedded_pg, tmp_path) -> None:
    schema = f"wq_{uuid.uuid4().hex[:8]}"
    env = {
        "NYLA_DATABASE_URL": embedded_pg,
        "NYLA_DATABASE_SCHEMA": schema,
        "NYLA_USER": "rita",
        "NYLA_HOME": str(tmp_path / "home"),
        "NYLA_CONFIG": str(tmp_path / "none.toml"),
        "NYLA_JOBS": "procrastinate",
    }
    db = open_database(embedded_pg, schema)
    kernel = plugin_kernel(RunsProbe(), db=db, builtins=True, settings={"jobs": "procrastinate"})
    try:
        wf = await three_steps(kernel)
        (tmp_path / "block").touch()
        started = await kernel.workflow_runs.start(wf, RITA)
        assert started.status == "queued"
        worker = ["worker", "--concurrency", "1"]
        first = child(tmp_path, env, *worker)
        try:
            assert await until_node_runs(kernel, "n2", tmp_path / "calls.log", "wait") == started.id
        finally:
            kill(first)
        (tmp_path / "block").unlink()
        second = child(tmp_path, env, *worker)
        try:
            run = await asyncio.wait_for(kernel.workflow_runs.wait(started.id, RITA), 240)
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(timeout=60)
        events = await kernel.workflow_runs.events(started.id, RITA)
        check_resumed(run, events, (tmp_path / "calls.log").read_text().split())
        first_job = await kernel.jobs.store.get(started.job_id)
        assert first_job.status == "error" and run.job_id != started.job_id
        assert (await kernel.jobs.store.get(run.job_id)).status == "done"
    finally:
        await kernel.aclose()
        await db.drop_schema()
        await db.dispose()


async def test_a_cancel_reaches_the_worker_running_the_node(embedded_pg, tmp_path) -> None:
    """Cancelled from another process, the run stops in the worker: the node under way is
    stopped and the node after it never runs; the worker goes on serving."""
    schema = f"wc_{uuid.uuid4().hex[:8]}"
    env = {
        "NYLA_DATABASE_URL": embedded_pg,
        "NYLA_DATABASE_SCHEMA": schema,
        "NYLA_USER": "rita",
        "NYLA_HOME": str(tmp_path / "home"),
        "NYLA_CONFIG": str(tmp_path / "none.toml"),
        "NYLA_JOBS": "procrastinate",
    }
    db = open_database(embedded_pg, schema)
    kernel = plugin_kernel(RunsProbe(), db=db, builtins=True, settings={"jobs": "procrastinate"})
    try:
        wf = await three_steps(kernel)
        (tmp_path / "block").touch()  # never removed: only the cancel ends the node
        started = await kernel.workflow_runs.start(wf, RITA)
        worker = child(tmp_path, env, "worker", "--concurrency", "1")
        try:
            await until_node_runs(kernel, "n2", tmp_path / "calls.log", "wait")
            assert await kernel.workflow_runs.cancel(started.id, RITA) is True
            # one run at a time in this worker: a next run ends only if the node was stopped
            after = await kernel.workflows.create("After", RITA)
            await kernel.workflows.add_node(after.id, "runs", "step", {"label": "after"}, RITA)
            then = await kernel.workflow_runs.start(after.id, RITA)
            done = await asyncio.wait_for(kernel.workflow_runs.wait(then.id, RITA), 240)
            assert done.status == "done" and worker.poll() is None
            run = await kernel.workflow_runs.get(started.id, RITA)
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
        assert run.status == "cancelled"
        assert [(n.status, n.error_code) for n in run.nodes] == [
            ("done", None),
            ("cancelled", "CANCELLED"),
            ("cancelled", None),
        ]
        assert (tmp_path / "calls.log").read_text().split() == ["a", "wait", "after"]
        assert (await kernel.jobs.store.get(started.job_id)).status == "cancelled"
    finally:
        await kernel.aclose()
        await db.drop_schema()
        await db.dispose()
