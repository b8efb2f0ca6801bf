"""The feature data sub-agent on the real agent loop with a scripted model: repair telemetry,
inherited limits and neutralization, legacy vs ontology prompt, and queryFeatureInstance."""

from __future__ import annotations

import json

import pytest

from nyla.agent.tool_services import tool_services
from nyla.errors import ConfigurationError
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import Role
from nyla.models.tools import ToolContext

from .conftest import INSTANCE, trustee

pytestmark = pytest.mark.db

toolbox = pytest.importorskip("nyla_toolbox_trustee")

SUM_BALANCE = (
    "aggregateTable",
    {
        "table": "trustee_accounts",
        "function": "SUM",
        "field": "closing_balance",
        "filters": [{"field": "account_number", "op": "like", "value": "102%"}],
    },
)
READ_BALANCE = (
    "queryTable",
    {
        "table": "trustee_accounts",
        "filters": [
            {"field": "account_number", "op": "like", "value": "102%"},
            {"field": "period", "op": "eq", "value": "2025-03"},
        ],
        "fields": ["account_number", "closing_balance"],
    },
)


def last_tool_payload(request) -> dict:
    tool_messages = [m for m in request.messages if m.role == Role.TOOL]
    return json.loads(tool_messages[-1].text)


def repairing_script(request, index):
    """Sums a balance first, reads the validator's answer, repairs, then answers."""
    if index == 0:
        return [SUM_BALANCE]
    if index == 1:
        payload = last_tool_payload(request)
        assert payload["errorDetails"]["code"] == "INVALID_AGGREGATE_TARGET"
        return [READ_BALANCE]
    payload = last_tool_payload(request)
    assert "rows" in payload, payload
    rows = payload["rows"]
    return f"The bank balance is CHF {sum(r['closing_balance'] for r in rows):.2f}"


@pytest.fixture
def agent_kernel(seeded_kernel, scripted, make_kernel):
    def build(script, **kw):
        provider = scripted(script, **kw)
        # a second kernel over the same seeded schema
        return make_kernel(provider, trustee, toolbox, db=seeded_kernel.db), provider

    return build


async def test_repair_loop_telemetry_and_answer(agent_kernel, dataset):
    kernel, provider = agent_kernel(repairing_script)
    result = await kernel.features.run_data_agent(
        "trustee",
        "Bank balance end of March 2025?",
        feature_instance_id=INSTANCE,
        model="scripted:model",
    )
    expected = sum(
        b.closing_balance
        for b in dataset.balances
        if b.period == "2025-03" and b.account_number.startswith("102")
    )
    assert result.completed, result.summary
    assert f"{expected:.2f}" in result.answer
    # switching tools is a repair for the eval, not a same-tool repeat for the loop's counters
    assert (result.validation_failures, result.repair_attempts, result.success_after_repair) == (
        1,
        0,
        0,
    )
    assert (result.rejections, result.repaired_rejections) == (1, 1)
    assert [c.code for c in result.calls] == ["INVALID_AGGREGATE_TARGET", None]
    assert result.rounds == 3 and result.cost_chf > 0
    # the system prompt is the schema prompt with the compiled ontology
    system = provider.requests[0].messages[0]
    assert system.role == Role.SYSTEM and "BANK_BALANCE_AT_DATE" in system.text


async def test_same_tool_repair_is_counted_by_the_loop(agent_kernel):
    def misspelt_then_fixed(request, index):
        if index == 0:
            name, args = READ_BALANCE
            bad = json.loads(json.dumps(args))
            bad["filters"][0]["field"] = "accountNumber"
            return [(name, bad)]
        if index == 1:
            details = last_tool_payload(request)["errorDetails"]
            assert (details["code"], details["suggestion"]) == ("FIELD_NOT_FOUND", "account_number")
            return [READ_BALANCE]
        return "done"

    kernel, _ = agent_kernel(misspelt_then_fixed)
    result = await kernel.features.run_data_agent(
        "trustee", "q", feature_instance_id=INSTANCE, model="scripted:model"
    )
    assert (result.validation_failures, result.repair_attempts, result.success_after_repair) == (
        1,
        1,
        1,
    )
    assert result.summary["validationFailures"] == 1


async def test_baseline_runs_without_validator_and_with_domain_hints(agent_kernel):
    seen = {}

    def naive(request, index):
        if index == 0:
            seen["system"] = request.messages[0].text
            return [SUM_BALANCE]
        seen["payload"] = last_tool_payload(request)
        return f"Total: {seen['payload']['rows'][0]['value']:.2f}"

    kernel, _ = agent_kernel(naive)
    result = await kernel.features.run_data_agent(
        "trustee",
        "Bank balance?",
        feature_instance_id=INSTANCE,
        model="scripted:model",
        validate=False,
        use_ontology=False,
    )
    assert result.validation_failures == 0 and result.calls[0].success
    assert "## Domain hints" in seen["system"] and "Domain ontology" not in seen["system"]


async def test_limits_and_neutralization_are_inherited(agent_kernel):
    def loop_forever(request, index):
        return [READ_BALANCE]

    kernel, _ = agent_kernel(loop_forever)
    result = await kernel.features.run_data_agent(
        "trustee",
        "q",
        context=RunContext(feature_instance_id=INSTANCE, require_neutralization=True),
        model="scripted:model",
        remaining_rounds=2,
    )
    assert result.status == "maxRoundsReached" and result.rounds <= 2
    trace = await kernel.agent.trace(result.run_id)
    assert trace.context.require_neutralization is True
    assert trace.context.feature_instance_id == INSTANCE
    with pytest.raises(ConfigurationError):
        await kernel.features.run_data_agent("trustee", "q", model="scripted:model")
    with pytest.raises(ConfigurationError):
        await kernel.features.run_data_agent("ledger", "q", feature_instance_id=INSTANCE)


async def test_query_feature_instance_tool_charges_the_parent(agent_kernel, dataset):
    kernel, _ = agent_kernel(repairing_script)
    tool = next(t for t in kernel.plugins.tools() if t.name == "queryFeatureInstance")
    charged = []
    ctx = ToolContext(
        run=RunContext(feature_instance_id=INSTANCE),
        services=tool_services(kernel.agent.services),
        run_id="parent-1",
        remaining_rounds=5,
        remaining_budget_chf=1.0,
        on_charge=charged.append,
    )
    args = tool.args_model.model_validate({"question": "Bank balance end of March 2025?"})
    result = await tool.handler(args, ctx)
    assert result.success, result.error
    assert result.data["repairedRejections"] == 1 and result.data["runId"]
    assert "CHF" in result.content
    assert charged and charged[0] == pytest.approx(result.data["costChf"]) and charged[0] > 0
    # no instance, no rounds: clear errors, nothing run
    no_instance = await tool.handler(
        args, ToolContext(services=tool_services(kernel.agent.services))
    )
    assert not no_instance.success and "featureInstanceId" in no_instance.error
    spent = await tool.handler(args, ctx.model_copy(update={"remaining_rounds": 0}))
    assert not spent.success and "rounds" in spent.error


async def test_sub_agent_config_caps():
    from nyla.features.data_agent import sub_agent_config

    c = sub_agent_config(
        AgentConfig(max_rounds=20, max_cost_chf=0.5), remaining_rounds=3, remaining_budget_chf=0.2
    )
    assert (c.max_rounds, c.max_cost_chf) == (3, 0.2)
    c = sub_agent_config(None, remaining_rounds=0)
    assert c.max_rounds == 1


async def test_parent_run_delegates_through_query_feature_instance(agent_kernel, dataset):
    """A parent agent with the trustee toolbox asks; the sub-agent (same scripted model,
    recognised by its data-agent system prompt) repairs and answers; the parent's cost
    includes the sub-agent's and the sub-run's trace points at its parent."""

    def script(request, index):
        if "data agent" in request.messages[0].text:
            tool_turns = [m for m in request.messages if m.role == Role.TOOL]
            return repairing_script(request, len(tool_turns))
        tool_turns = [m for m in request.messages if m.role == Role.TOOL]
        if not tool_turns:
            return [("queryFeatureInstance", {"question": "Bank balance end of March 2025?"})]
        return f"The data agent says: {tool_turns[-1].text}"

    kernel, _ = agent_kernel(script)
    config = AgentConfig(
        model="scripted:model", initial_toolboxes=["featureData"], max_cost_chf=1.0
    )
    context = RunContext(feature_instance_id=INSTANCE)
    events = [e async for e in kernel.agent.run("How much is in the bank?", config, context)]
    summary = events[-1].data
    assert summary["status"] == "completed"
    expected = sum(
        b.closing_balance
        for b in dataset.balances
        if b.period == "2025-03" and b.account_number.startswith("102")
    )
    assert f"{expected:.2f}" in events[-2].text
    parent = await kernel.agent.trace(summary["runId"])
    tool_result = next(e for e in events if e.type.value == "TOOL_RESULT")
    assert tool_result.data["success"] is True
    # the sub-run: persisted with its parent, its rejected call carries the failure code
    from sqlalchemy import select

    from nyla.agent.tables import RunRow

    async with kernel.db.session() as s:
        child_id = await s.scalar(
            select(RunRow.run_id).where(RunRow.parent_run_id == parent.run_id)
        )
    child = await kernel.agent.trace(child_id)
    assert child.validation_failures == 1
    assert [c.validation_failure_code for c in child.tool_calls] == [
        "INVALID_AGGREGATE_TARGET",
        None,
    ]
    assert parent.cost_chf > child.cost_chf > 0
