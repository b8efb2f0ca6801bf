"""Regression tests from the held-out attack campaign (issue 12): the data sub-agent is bound
to the run's feature instance and inherits the run's model restriction."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from nyla.agent.tables import RunRow
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import Role

from .conftest import INSTANCE, trustee

pytestmark = pytest.mark.db

toolbox = pytest.importorskip("nyla_toolbox_trustee")


def tool_payloads(request) -> list[dict]:
    return [json.loads(m.text) for m in request.messages if m.role == Role.TOOL]


def tool_turns(request) -> list[str]:
    return [m.text for m in request.messages if m.role == Role.TOOL]


async def test_query_feature_instance_cannot_read_another_instance(
    seeded_kernel, scripted, make_kernel
):
    def parent(request, index):
        if "data agent" in request.messages[0].text:  # must never be reached
            return "the other instance's figures"
        if index == 0:
            return [("queryFeatureInstance", {"question": "bank?", "featureInstanceId": "other"})]
        return "done"

    provider = scripted(parent)
    kernel = make_kernel(provider, trustee, toolbox, db=seeded_kernel.db)
    config = AgentConfig(model="scripted:model", initial_toolboxes=["featureData"])
    events = [
        e async for e in kernel.agent.run("q", config, RunContext(feature_instance_id="fuzz"))
    ]
    result = next(e for e in events if e.type.value == "TOOL_RESULT")
    assert result.data["success"] is False
    payload = tool_payloads(provider.requests[1])[0]
    assert payload["errorDetails"]["code"] == "ACCESS_DENIED"
    assert payload["errorDetails"]["field"] == "featureInstanceId"
    # no data agent ran: only the parent's two calls, and no child run was recorded
    assert len(provider.requests) == 2
    async with kernel.db.session() as s:
        children = (
            await s.execute(
                select(RunRow.run_id).where(RunRow.parent_run_id == events[-1].data["runId"])
            )
        ).all()
    assert children == []


async def test_the_run_s_own_instance_stays_usable_by_id(seeded_kernel, scripted, make_kernel):
    def parent(request, index):
        if "data agent" in request.messages[0].text:
            return "42"
        if not tool_turns(request):
            return [("queryFeatureInstance", {"question": "q", "featureInstanceId": INSTANCE})]
        return "done"

    provider = scripted(parent)
    kernel = make_kernel(provider, trustee, toolbox, db=seeded_kernel.db)
    config = AgentConfig(model="scripted:model", initial_toolboxes=["featureData"])
    events = [
        e async for e in kernel.agent.run("q", config, RunContext(feature_instance_id=INSTANCE))
    ]
    result = next(e for e in events if e.type.value == "TOOL_RESULT")
    assert result.data["success"] is True


async def test_sub_agent_of_an_on_premises_run_never_reaches_a_cloud_model(
    seeded_kernel, scripted, make_kernel
):
    def private(request, index):
        if "data agent" in request.messages[0].text:
            return "answer from premises"
        if not tool_turns(request):
            return [("queryFeatureInstance", {"question": "bank?"})]
        return "done"

    def cloud(request, index):
        return "answer from the cloud"

    on_prem = scripted(private, id="private-llm", on_premises=True, quality_rank=10)
    cloud_provider = scripted(cloud, id="cloud", quality_rank=90)
    kernel = make_kernel(on_prem, cloud_provider, trustee, toolbox, db=seeded_kernel.db)
    config = AgentConfig(model="private-llm:model", initial_toolboxes=["featureData"])
    events = [
        e async for e in kernel.agent.run("q", config, RunContext(feature_instance_id=INSTANCE))
    ]
    assert events[-1].data["status"] == "completed"
    assert cloud_provider.requests == []
    assert any("data agent" in r.messages[0].text for r in on_prem.requests)
    result = next(e for e in events if e.type.value == "TOOL_RESULT")
    assert "answer from premises" in result.text


async def test_an_on_premises_run_does_not_fall_back_to_the_cloud(scripted, make_kernel):
    from nyla.errors import ProviderError

    def failing(request, index):
        raise ProviderError("on-premises endpoint down", provider="private-llm", retryable=True)

    on_prem = scripted(failing, id="private-llm", on_premises=True)
    cloud_provider = scripted(lambda r, i: "cloud", id="cloud", quality_rank=90)
    kernel = make_kernel(
        on_prem, cloud_provider, settings={"ai": {"max_attempts": 1, "base_delay_s": 0}}
    )
    config = AgentConfig(model="private-llm:model", stream=False)
    kernel.settings["persist_traces"] = False
    events = [e async for e in kernel.agent.run("q", config, RunContext())]
    assert events[-1].data["status"] == "error"
    assert cloud_provider.requests == []
