"""Listing workflow runs: the mandate and feature-instance filter is applied in the query,
before the limit, so a user's many runs elsewhere do not hide the ones they may see."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from runs_probe import RunsProbe

from nyla.actions.runs import run_order
from nyla.models.agent import RunContext
from nyla.models.workflow_runs import RunOptions

pytestmark = pytest.mark.db


@pytest.fixture
async def kernel(make_kernel, db):
    kernel = make_kernel(RunsProbe(), db=db)
    yield kernel
    await kernel.aclose()


async def _queued(kernel, context: RunContext, count: int) -> list[str]:
    """``count`` queued runs of a one-node workflow of ``context`` (stored, not launched)."""
    wf = await kernel.workflows.create("W", context)
    await kernel.workflows.add_node(wf.id, "runs", "step", {"label": "x"}, context)
    graph = await kernel.workflows.get(wf.id, context)
    ids = []
    for _ in range(count):
        run_id = uuid.uuid4().hex
        store = kernel.workflow_runs.store
        await store.create(run_id, graph, run_order(graph), context, RunOptions())
        ids.append(run_id)
    return ids


async def test_runs_of_the_mandate_are_listed_behind_more_than_fifty_others(kernel):
    m1 = RunContext(user_id="alice", mandate_id="m1")
    m2 = RunContext(user_id="alice", mandate_id="m2")
    mine = await _queued(kernel, m1, 2)
    others = await _queued(kernel, m2, 55)  # newer: the first 50 of alice's runs are all m2
    listed = await kernel.workflow_runs.list_for(m1)
    assert sorted(r.id for r in listed) == sorted(mine)
    assert len(await kernel.workflow_runs.list_for(m2)) == 50
    assert {r.id for r in await kernel.workflow_runs.list_for(m2)} <= set(others)


async def test_runs_of_the_feature_instance_are_listed_behind_more_than_fifty_others(kernel):
    fi1 = RunContext(user_id="alice", mandate_id="m1", feature_instance_id="fi1")
    fi2 = RunContext(user_id="alice", mandate_id="m1", feature_instance_id="fi2")
    mine = await _queued(kernel, fi1, 1)
    await _queued(kernel, fi2, 52)
    assert [r.id for r in await kernel.workflow_runs.list_for(fi1)] == mine
    everywhere = await kernel.workflow_runs.list_for(RunContext(user_id="alice", mandate_id="m1"))
    assert len(everywhere) == 50 and mine[0] not in {r.id for r in everywhere}
