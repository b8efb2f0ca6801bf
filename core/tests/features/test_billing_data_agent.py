"""Governance through the feature data agent (``queryFeatureInstance``): its calls are
billed to the run that asked (the ledger rows of the run add up to its reported cost, the
sub-run has none of its own), and a mandate's model access binds it too."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from nyla.agent.tables import RunRow
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import Role

from .conftest import INSTANCE, trustee

pytestmark = pytest.mark.db


def script(request, index):
    if "data agent" in request.messages[0].text:
        return "The bank balance is CHF 42.00"
    if not [m for m in request.messages if m.role == Role.TOOL]:
        return [("queryFeatureInstance", {"question": "Bank balance end of March 2025?"})]
    return "The data agent says 42."


async def test_the_data_agent_s_calls_are_the_run_s_ledger_rows(
    seeded_kernel, scripted, make_kernel
):
    provider = scripted(script, price_input=40.0, price_output=80.0)
    kernel = make_kernel(provider, trustee, db=seeded_kernel.db)
    mandate = f"m-{uuid.uuid4().hex[:6]}"
    context = RunContext(user_id="alice", mandate_id=mandate, feature_instance_id=INSTANCE)
    config = AgentConfig(initial_toolboxes=["featureData"], stream=False)
    events = [e async for e in kernel.agent.run("How much is in the bank?", config, context)]
    summary = events[-1].data
    assert summary["status"] == "completed"
    rows = await kernel.billing.run_entries(summary["runId"])
    chats = [r for r in rows if r.operation != "embedding"]
    assert len(chats) == len(provider.requests) == 3  # parent twice, the data agent once
    total = sum(r.cost_chf for r in rows)
    assert total == pytest.approx(summary["costChf"], rel=1e-9, abs=1e-12) and total > 0
    async with kernel.db.session() as s:
        child = await s.scalar(
            select(RunRow.run_id).where(RunRow.parent_run_id == summary["runId"])
        )
    assert child is not None and await kernel.billing.run_entries(child) == []


async def test_a_mandate_s_model_access_binds_the_data_agent(seeded_kernel, scripted, make_kernel):
    private = scripted(script, id="private", quality_rank=10)
    cloud = scripted(script, id="cloud", quality_rank=90)
    kernel = make_kernel(private, cloud, trustee, db=seeded_kernel.db)
    mandate = f"m-{uuid.uuid4().hex[:6]}"
    await kernel.model_access.set_providers("mandate", mandate, ["private"])
    context = RunContext(user_id="alice", mandate_id=mandate, feature_instance_id=INSTANCE)
    config = AgentConfig(initial_toolboxes=["featureData"], stream=False)
    events = [e async for e in kernel.agent.run("How much is in the bank?", config, context)]
    assert events[-1].data["status"] == "completed"
    assert cloud.requests == [] and len(private.requests) == 3
    # the data agent asked directly for the forbidden model, as a sub-agent of a run
    result = await kernel.features.run_data_agent(
        "trustee",
        "Bank balance end of March 2025?",
        context=context,
        feature_instance_id=INSTANCE,
        model="cloud:model",
        parent_run_id="a-parent-run",
    )
    assert not result.completed and result.status == "error"
    trace = await kernel.agent.trace(result.run_id)
    assert "ModelAccessDenied" in trace.error
    assert f"mandate '{mandate}' (providers: private)" in trace.error
    assert cloud.requests == []
