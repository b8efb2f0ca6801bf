"""The streamable-HTTP MCP endpoint of a live ``nyla serve`` on loopback, reached with the
official SDK's client: as alice it lists the tools and searches her knowledge, never bob's
(and bob never hers); no token, a wrong one or a revoked one is refused with 401."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
import pytest_asyncio
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from nyla import RunContext
from nyla_host.tokens import TokenStore

from .mcp_wire import INITIALIZE
from .memfs import ServedPlugin
from .served import Served

pytestmark = [pytest.mark.db, pytest.mark.slow]


@pytest_asyncio.fixture
async def served(embedded_pg, tmp_path):
    server = Served(embedded_pg, tmp_path)
    try:
        yield server
    finally:
        server.stop()
        await server.drop()


async def _prepare(served: Served, make_kernel) -> dict[str, str]:
    """Alice's and bob's notes indexed with the served process's embedder; their tokens."""
    await served.prepare()
    db = served.database()
    try:
        settings = {"knowledge": {"embedding_model": "e2e:hash"}}
        kernel = make_kernel(ServedPlugin(), db=db, settings=settings)
        tokens = {}
        for user, text in (
            ("alice", b"the zephyr project budget is 40k"),
            ("bob", b"the zephyr project secret plan of bob"),
        ):
            context = RunContext(user_id=user, mandate_id="m1")
            item = await kernel.files.save(f"{user}-notes.txt", text, context)
            done = await kernel.knowledge.indexing.index_file(item, text, context=context)
            assert done.status != "failed", done
            tokens[user], _ = await TokenStore(db).create(user, role="user", mandate_id="m1")
    finally:
        await db.dispose()
    return tokens


async def _search_as(url: str, token: str) -> tuple[list[str], list[dict]]:
    """The tool names and the hits for "zephyr project", through the SDK's HTTP client."""
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    with anyio.fail_after(60):
        async with (
            client,
            streamable_http_client(f"{url}/mcp", http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
            found = await session.call_tool("searchKnowledge", {"query": "zephyr project"})
    assert not found.is_error, found
    assert all(t.annotations is not None and t.annotations.read_only_hint for t in tools)
    return [t.name for t in tools], json.loads(found.content[0].text)


async def test_each_user_searches_only_their_own_knowledge_over_http(served, make_kernel):
    tokens = await _prepare(served, make_kernel)
    served.start()
    names, alice_hits = await _search_as(served.url, tokens["alice"])
    assert names == ["searchKnowledge", "listDataSources", "searchDataSource"]
    assert [h["fileName"] for h in alice_hits] == ["alice-notes.txt"]
    assert "secret plan" not in json.dumps(alice_hits)
    _, bob_hits = await _search_as(served.url, tokens["bob"])
    assert [h["fileName"] for h in bob_hits] == ["bob-notes.txt"]


async def test_no_wrong_or_revoked_token_is_refused(served, make_kernel):
    tokens = await _prepare(served, make_kernel)
    served.start()
    db = served.database()
    try:
        store = TokenStore(db)
        revoked, info = await store.create("alice", role="user", mandate_id="m1")
        await store.revoke(info.id)
    finally:
        await db.dispose()
    hello = INITIALIZE
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        for credential in (None, "nyla_abc_notavalidsecretatall", revoked):
            headers = dict(accept)
            if credential is not None:
                headers["Authorization"] = f"Bearer {credential}"
            response = await http.post("/mcp", json=hello, headers=headers)
            assert response.status_code == 401, (credential, response.text)
            # where an MCP client finds the authorization server (RFC 9728)
            challenge = response.headers["www-authenticate"]
            assert challenge.startswith(f'Bearer resource_metadata="{served.url}/.well-known/')
        # the same request with a valid token is answered: the refusal was the credential
        headers = {**accept, "Authorization": f"Bearer {tokens['alice']}"}
        response = await http.post("/mcp", json=hello, headers=headers)
        assert response.status_code == 200, response.text
        assert response.json()["result"]["serverInfo"]["name"] == "nyla"
        # stateless: no stream to hold open, no session to end
        for method in ("GET", "DELETE"):
            refused = await http.request(method, "/mcp", headers=headers)
            assert refused.status_code == 405, (method, refused.text)
    # the SDK's client, refused, fails before any session exists
    with pytest.RaisesGroup(pytest.RaisesGroup(MCPError)):
        await _search_as(served.url, revoked)


async def test_a_callers_server_is_kept_and_never_anothers(state, client, token_for, monkeypatch):
    """In-process: the built server is kept per user and mandate, for at most MAX_SERVERS."""
    from nyla_host.identity import Identity
    from nyla_host.routes import mcp

    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {**await token_for("alice"), "Accept": "application/json, text/event-stream"}
    answered = await client.post("/mcp", json=hello, headers=headers)
    assert answered.status_code == 200 and answered.json()["result"] == {}, answered.text
    servers = state.services["mcp"]
    alice = Identity(user_id="alice", mandate_id="m1")
    kept = servers.server(alice)
    assert servers.server(alice.model_copy(update={"role": "sysadmin"})) is kept
    assert servers.server(Identity(user_id="bob", mandate_id="m1")) is not kept
    assert servers.server(Identity(user_id="alice", mandate_id="m2")) is not kept
    monkeypatch.setattr(mcp, "MAX_SERVERS", 2)
    servers.server(Identity(user_id="carol", mandate_id="m1"))
    assert servers.server(alice) is not kept  # alice was the least recently used: dropped
