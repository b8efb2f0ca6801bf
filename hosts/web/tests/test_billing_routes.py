"""Governance routes for mandate admins: the billing report of their own mandate, limits,
credit (a sysadmin's), and the mandate's model access — each enforced on the runs the host
starts (a run over the limit ends budgetExceeded naming it; the page offers only the models
the mandate's entry allows and a run naming another is refused)."""

from __future__ import annotations

import pytest

from nyla import AiCallRequest, Message, OperationType, Role, RunContext

from .conftest import wait_run

pytestmark = pytest.mark.db


@pytest.fixture
def cloud(scripted):
    return scripted(lambda request, index: "from the cloud", id="cloud", quality_rank=1)


@pytest.fixture
def kernel(db, make_kernel, provider, cloud, memory_plugin, tmp_path):
    return make_kernel(
        provider,
        cloud,
        memory_plugin,
        db=db,
        settings={"knowledge": {"embedding_model": "scripted:model"}, "data_dir": tmp_path},
    )


async def spend(state, user: str, mandate: str) -> float:
    request = AiCallRequest(
        operation=OperationType.AGENT,
        messages=[Message(role=Role.USER, content="hello")],
        context=RunContext(user_id=user, mandate_id=mandate),
    )
    return (await state.kernel.ai.call(request)).cost_chf


async def test_the_report_is_a_mandate_admin_s_and_only_of_their_mandate(state, client, token_for):
    alice_cost = await spend(state, "alice", "m1")
    await spend(state, "bob", "m2")
    user = await token_for("alice")
    admin = await token_for("anna", role="mandate-admin")
    sysadmin = await token_for("root", role="sysadmin", mandate=None)
    assert (await client.get("/api/billing/report", headers=user)).status_code == 403
    report = (await client.get("/api/billing/report", headers=admin)).json()
    assert report["mandateId"] == "m1"
    assert [(x["userId"], x["operation"]) for x in report["lines"]] == [("alice", "agent")]
    assert report["callsChf"] == pytest.approx(alice_cost)
    other = await client.get("/api/billing/report?mandateId=m2", headers=admin)
    assert other.status_code == 403
    everything = (await client.get("/api/billing/report", headers=sysadmin)).json()
    assert {x["mandateId"] for x in everything["lines"]} == {"m1", "m2"}
    bad = await client.get("/api/billing/report?month=2026-13", headers=admin)
    assert bad.status_code == 400 and "YYYY-MM" in bad.json()["detail"]


async def test_a_limit_set_by_the_mandate_admin_ends_a_run_over_it(state, client, token_for):
    admin = await token_for("anna", role="mandate-admin")
    alice = await token_for("alice")
    put = await client.put("/api/billing/limits", json={"monthlyLimitChf": 0}, headers=admin)
    assert put.status_code == 200 and put.json()["monthlyLimitChf"] == 0
    listed = (await client.get("/api/billing/limits", headers=admin)).json()["policies"]
    assert [(p["subject"], p["monthlyLimitChf"]) for p in listed] == [("m1", 0.0)]
    run = (await client.post("/api/runs", json={"prompt": "hi"}, headers=alice)).json()
    await wait_run(state, run["runId"])
    shown = (await client.get(f"/api/runs/{run['runId']}", headers=alice)).json()
    assert shown["trace"]["status"] == "budgetExceeded"
    assert "spending refused: mandate 'm1': monthly limit 0.00 CHF" in shown["trace"]["error"]
    # what only a sysadmin sets
    for body in ({"spendingAllowed": False}, {"prepaid": True}):
        refused = await client.put("/api/billing/limits", json=body, headers=admin)
        assert refused.status_code == 403
    for_user = {"userId": "alice", "monthlyLimitChf": 1}
    assert (
        await client.put("/api/billing/limits", json=for_user, headers=admin)
    ).status_code == 403
    credit = {"mandateId": "m1", "amountChf": 5}
    assert (await client.post("/api/billing/credit", json=credit, headers=admin)).status_code == 403
    sysadmin = await token_for("root", role="sysadmin", mandate=None)
    added = await client.post("/api/billing/credit", json=credit, headers=sysadmin)
    assert added.status_code == 200 and added.json()["balanceChf"] == pytest.approx(5.0)


async def test_the_mandate_s_model_access_binds_its_runs(state, client, token_for, cloud):
    admin = await token_for("anna", role="mandate-admin")
    alice = await token_for("alice")
    unknown = await client.put("/api/model-access", json={"providers": ["nope"]}, headers=admin)
    assert unknown.status_code == 400 and "nope" in unknown.json()["detail"]
    put = await client.put("/api/model-access", json={"providers": ["scripted"]}, headers=admin)
    assert put.json() == {
        "kind": "mandate",
        "subject": "m1",
        "models": [],
        "providers": ["scripted"],
    }
    entries = (await client.get("/api/model-access", headers=admin)).json()["entries"]
    assert entries == [
        {"kind": "mandate", "subject": "m1", "models": [], "providers": ["scripted"]}
    ]
    other = await client.put(
        "/api/model-access", json={"mandateId": "m2", "providers": ["cloud"]}, headers=admin
    )
    assert other.status_code == 403
    # the page offers only what the entry allows, and a run naming another model is refused
    offered = (await client.get("/api/models", headers=alice)).json()["models"]
    assert "cloud:model" not in {m["id"] for m in offered}
    body = {"prompt": "hi", "model": "cloud:model"}
    refused = await client.post("/api/runs", json=body, headers=alice)
    assert refused.status_code == 403 and "cloud:model" in refused.json()["detail"]
    # another mandate is offered the cloud model; a run of alice's without a model stays inside
    elsewhere = await client.get("/api/models", headers=await token_for("eve", mandate="m2"))
    assert "cloud:model" in {m["id"] for m in elsewhere.json()["models"]}
    run = (await client.post("/api/runs", json={"prompt": "hi"}, headers=alice)).json()
    await wait_run(state, run["runId"])
    shown = (await client.get(f"/api/runs/{run['runId']}", headers=alice)).json()
    assert shown["trace"]["status"] == "completed" and shown["trace"]["model"] == "scripted:model"
    assert cloud.requests == []
