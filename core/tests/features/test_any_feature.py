"""``queryFeatureInstance`` for any installed feature with an ontology, proven with a second
feature (``inventory``, see :mod:`.inventory_feature`) beside trustee: the tool finds the
instance's feature, runs that feature's data agent with its ontology compiled into the prompt
and its query validator in front of the tables, neutralises the sub-agent's model calls because
the feature's data requires it while the parent run does not neutralise, and passes the run's
identity, model restriction and budget on."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from nyla.agent.tables import RunRow
from nyla.errors import ConfigurationError, NotFoundError
from nyla.models.agent import AgentConfig, EventType, RunContext
from nyla.models.ai import Role

from .conftest import INSTANCE, trustee
from .inventory_feature import InventoryFeature, InventoryPlugin, NoOntologyFeature

pytestmark = pytest.mark.db

SHOP = "shop-1"
RAW_EMAIL = "anna.meier@example.ch"
PARENT_EMAIL = "bob.parent@example.ch"
SUM_PRICES = (
    "aggregateTable",
    {"table": "inventory_items", "function": "SUM", "field": "unit_price"},
)
READ_ITEM = (
    "queryTable",
    {
        "table": "inventory_items",
        "filters": [{"field": "sku", "op": "eq", "value": "A-100"}],
        "fields": ["sku", "name", "supplier_contact"],
    },
)


def tool_texts(request: Any) -> list[str]:
    return [m.text for m in request.messages if m.role == Role.TOOL]


def tool_payloads(request: Any) -> list[dict[str, Any]]:
    return [json.loads(text) for text in tool_texts(request)]


def is_data_agent(request: Any) -> bool:
    return "You are the data agent" in request.messages[0].text


def script(request: Any, index: int) -> Any:
    """The parent asks once; the data agent sums prices (refused), reads the row, answers."""
    if not is_data_agent(request):
        if not tool_texts(request):
            return [("queryFeatureInstance", {"question": "Who supplies article A-100?"})]
        return f"Answer: {tool_texts(request)[-1]}"
    payloads = tool_payloads(request)
    if not payloads:
        return [SUM_PRICES]
    if len(payloads) == 1:
        return [READ_ITEM]
    row = payloads[-1]["rows"][0]
    return f"{row['name']} is supplied by {row['supplier_contact']}"


@pytest.fixture
async def shop_kernel(seeded_kernel, scripted, make_kernel):
    """Trustee (seeded :data:`INSTANCE`) and inventory (seeded :data:`SHOP`) on one schema;
    the kernel's own neutralisation is off, so only a run that requires it neutralises."""
    provider = scripted(script)
    plugin = InventoryPlugin(InventoryFeature(), NoOntologyFeature())
    kernel = make_kernel(
        provider, trustee, plugin, db=seeded_kernel.db, settings={"ai": {"neutralize": False}}
    )
    await kernel.features.seed("inventory", SHOP)
    return kernel, provider


async def test_the_instance_s_feature_is_looked_up(shop_kernel):
    kernel, _ = shop_kernel
    features = kernel.features
    assert await features.feature_of_instance(SHOP, None) == "inventory"
    assert await features.feature_of_instance(INSTANCE, None) == "trustee"
    assert await features.feature_of_instance(SHOP, "inventory") == "inventory"
    with pytest.raises(NotFoundError, match="no feature holds data"):
        await features.feature_of_instance("nobody", None)
    with pytest.raises(ConfigurationError, match="declares no ontology"):
        await features.feature_of_instance(SHOP, "ledgerless")
    with pytest.raises(ConfigurationError, match="unknown feature"):
        await features.feature_of_instance(SHOP, "nosuch")
    assert features.requires_neutralization("inventory") is True
    assert features.requires_neutralization("trustee") is False


async def test_a_second_feature_s_data_agent_is_neutralised_when_its_parent_is_not(
    shop_kernel,
):
    kernel, provider = shop_kernel
    context = RunContext(
        user_id="ulla",
        mandate_id="m9",
        feature_instance_id=SHOP,
        allowed_models=["scripted:model"],
    )
    config = AgentConfig(model="scripted:model", max_rounds=6, max_cost_chf=0.5)
    prompt = f"Who supplies article A-100? Reply to {PARENT_EMAIL}."
    events = [e async for e in kernel.agent.run(prompt, config, context)]
    summary = events[-1].data
    assert summary["status"] == "completed", summary

    parent_requests = [r for r in provider.requests if not is_data_agent(r)]
    agent_requests = [r for r in provider.requests if is_data_agent(r)]
    assert len(agent_requests) == 3
    # the parent is not neutralised: its own prompt reaches the model as written
    assert PARENT_EMAIL in parent_requests[0].messages[-1].text
    # the data agent: the inventory ontology in its prompt, the validator in front of the tables
    system = agent_requests[0].messages[0].text
    assert "StockItem" in system and "inventory_items" in system and "trustee" not in system
    refused = tool_payloads(agent_requests[1])[0]
    assert refused["errorDetails"]["code"] == "INVALID_AGGREGATE_TARGET"
    assert "unit_price" in json.dumps(refused)
    # ... and every one of its model calls neutralised: the supplier's e-mail never reached it
    for request in agent_requests:
        text = "\n".join(m.text for m in request.messages)
        assert RAW_EMAIL not in text and "Anna Meier" not in text
    row = tool_payloads(agent_requests[2])[-1]["rows"][0]
    assert row["sku"] == "A-100" and row["supplier_contact"]  # a placeholder stands there
    # the tool answered from the inventory feature, placeholders restored for the parent
    result = next(e for e in events if e.type is EventType.TOOL_RESULT)
    assert result.data["success"] is True, result.data
    assert RAW_EMAIL in result.text
    # the sub-run: the parent's identity and model restriction, neutralisation required
    async with kernel.db.session() as s:
        child = (
            await s.execute(select(RunRow).where(RunRow.parent_run_id == summary["runId"]))
        ).scalar_one()
    assert child.user_id == "ulla"
    assert child.context["mandateId"] == "m9"
    assert child.context["allowedModels"] == ["scripted:model"]
    assert child.context["requireNeutralization"] is True
    assert child.context["featureInstanceId"] == SHOP
    parent = await kernel.agent.trace(summary["runId"])
    assert parent.context.require_neutralization is False
    assert 0 < child.cost_chf <= summary["costChf"] <= config.max_cost_chf


async def test_a_feature_without_ontology_has_no_data_agent(shop_kernel):
    kernel, provider = shop_kernel
    context = RunContext(feature_instance_id=SHOP, feature_code="ledgerless")
    config = AgentConfig(model="scripted:model", max_rounds=3)
    events = [e async for e in kernel.agent.run("q", config, context)]
    result = next(e for e in events if e.type is EventType.TOOL_RESULT)
    assert result.data["success"] is False
    assert result.data["errorDetails"]["code"] == "NOT_AVAILABLE"
    assert "declares no ontology" in result.data["error"]
    assert not any(is_data_agent(r) for r in provider.requests)
