"""Service access on the host: a sysadmin (or a mandate admin for their mandate) grants and
revokes through /api/access/rules; a caller without the service gets a 403 whose JSON names
the permission — starting a run (service.agent), searching the knowledge store
(service.knowledge; through the MCP server a tool error naming it), adding a connection
(service.connector.<name>); /api/access/me shows what the caller may use."""

from __future__ import annotations

import pytest

from .conftest import wait_run

pytestmark = pytest.mark.db


def _allowed(body: dict) -> dict[str, bool]:
    return {p["permission"]: p["allowed"] for p in body["permissions"]}


async def test_grant_and_revoke_reach_every_route(state, client, token_for):
    alice = await token_for("alice", mandate="m1")
    admin = await token_for("root", role="sysadmin", mandate=None)
    m1_admin = await token_for("mia", role="mandateAdmin", mandate="m1")

    me = (await client.get("/api/access/me", headers=alice)).json()
    assert me["userId"] == "alice" and all(_allowed(me).values())

    rule = {"kind": "user", "subject": "alice", "permission": "agent", "allowed": False}
    assert (await client.put("/api/access/rules", json=rule, headers=alice)).status_code == 403
    set_rule = await client.put("/api/access/rules", json=rule, headers=admin)
    assert set_rule.status_code == 200 and set_rule.json()["permission"] == "service.agent"
    refused = await client.post("/api/runs", json={"prompt": "hi"}, headers=alice)
    assert refused.status_code == 403
    body = refused.json()
    assert body["error"] == "ServiceAccessDenied" and body["permission"] == "service.agent"
    assert "run the agent" in body["detail"]
    assert (await client.get("/api/conversations", headers=alice)).json()["conversations"] == []
    openai = await client.post(
        "/v1/chat/completions",
        json={"model": "nyla", "messages": [{"role": "user", "content": "hi"}]},
        headers=alice,
    )
    assert openai.status_code == 403 and "service.agent" in openai.text
    # one action run directly is one of the agent's tools: refused before it runs
    catalog = (await client.get("/api/automation2/catalog", headers=alice)).json()
    method = next(m for m in catalog["methods"] if m["actions"])
    path = f"/api/automation2/actions/{method['name']}/{method['actions'][0]['action']}"
    action = await client.post(path, json={}, headers=alice)
    assert action.status_code == 403, action.text
    assert action.json()["permission"] == "service.agent"
    assert _allowed((await client.get("/api/access/me", headers=alice)).json()) == {
        **_allowed(me),
        "service.agent": False,
    }

    # a mandate admin revokes the knowledge store for their mandate, not for a user
    knowledge = {"kind": "mandate", "subject": "m1", "permission": "knowledge", "allowed": False}
    assert (await client.put("/api/access/rules", json=knowledge, headers=m1_admin)).is_success
    other = {**knowledge, "subject": "m2"}
    assert (await client.put("/api/access/rules", json=other, headers=m1_admin)).status_code == 403
    search = await client.get("/api/knowledge/search", params={"q": "x"}, headers=alice)
    assert search.status_code == 403 and search.json()["permission"] == "service.knowledge"
    sync = await client.post("/api/datasources/ds-any/sync", headers=alice)
    assert sync.status_code == 403 and sync.json()["permission"] == "service.knowledge"
    listed = (await client.get("/api/access/rules", headers=m1_admin)).json()["rules"]
    assert listed == [
        {"kind": "mandate", "subject": "m1", "permission": "service.knowledge", "allowed": False}
    ]

    # a connector revoked for a role: adding a connection of it is refused, nothing stored
    jira = {"kind": "role", "subject": "user", "permission": "connector.jira", "allowed": False}
    assert (await client.put("/api/access/rules", json=jira, headers=admin)).is_success
    added = await client.post(
        "/api/connections", json={"service": "jira", "token": "t"}, headers=alice
    )
    assert added.status_code == 403 and added.json()["permission"] == "service.connector.jira"
    assert (await client.get("/api/connections", headers=alice)).json()["connections"] == []
    bad = {**jira, "permission": "service.root"}
    assert (await client.put("/api/access/rules", json=bad, headers=admin)).status_code == 400

    # granted back (the rule removed): alice runs again
    cleared = await client.delete(
        "/api/access/rules",
        params={"kind": "user", "subject": "alice", "permission": "service.agent"},
        headers=admin,
    )
    assert cleared.json() == {"removed": True}
    started = await client.post("/api/runs", json={"prompt": "hi"}, headers=alice)
    assert started.status_code == 202, started.text
    await wait_run(state, started.json()["runId"])


async def test_the_mcp_server_refuses_knowledge_search_without_the_service(state):
    from mcp import Client

    from nyla_host.mcp_server import build_server, identify

    token, _ = await state.tokens.create("carl", role="user", mandate_id="m3")
    server = build_server(state.kernel, await identify(state.tokens, token))
    await state.kernel.service_access.set("mandate", "m3", "service.knowledge", False)
    async with Client(server) as client:
        refused = await client.call_tool("searchKnowledge", {"query": "anything"})
    assert refused.is_error and "service.knowledge" in refused.content[0].text
    await state.kernel.service_access.set("user", "carl", "service.knowledge", True)
    async with Client(server) as client:
        allowed = await client.call_tool("searchKnowledge", {"query": "anything"})
    assert not allowed.is_error, allowed.content[0].text
