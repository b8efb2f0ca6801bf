"""The connection toolboxes over nyla's MCP server, reached with the official SDK's client
(in memory and over the host's streamable-HTTP ``/mcp``): alice lists and calls the tools of
her ClickUp connection (ClickUp faked at the wire), the call passing a run's gate (argument
validation, service access, the toolbox's write policy) and its text neutralised; bob, who
has no connection, sees none of them and cannot call them; a revoked connector is gone."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from nyla.testing import add_connection, import_file
from nyla_host.mcp_server import build_server, identify

fake_clickup = import_file(
    Path(__file__).parents[3] / "plugins/connectors/clickup/tests/fake_clickup.py"
)
NATIVE = ["searchKnowledge", "listDataSources", "searchDataSource"]
CLICKUP = ["searchClickUpTasks", "readClickUpTask", "writeClickUpTask"]


@pytest.fixture
def clickup():
    fake = fake_clickup.FakeClickUp()
    fake.add_space("9001", "790", "Engineering")
    inbox = fake.add_list("790", "-", "901", "Inbox")
    fake.tasks.append(fake_clickup.make_task("86c1", "Call back ada.lovelace@example.com", inbox))
    return fake


@pytest.fixture
def kernel(db, make_kernel, clickup, provider, memory_plugin, tmp_path):
    """The host's test kernel (with nyla's built-in plugins: the neutraliser) plus the
    ClickUp connector and toolbox, ClickUp reached at the wire."""
    from cryptography.fernet import Fernet

    import nyla_connector_clickup
    import nyla_toolbox_clickup

    settings = {
        "knowledge": {"embedding_model": "scripted:model"},
        "data_dir": tmp_path,
        "secret_key": Fernet.generate_key(),
        "transport": httpx.MockTransport(clickup),
    }
    plugins = (nyla_connector_clickup, nyla_toolbox_clickup, provider, memory_plugin)
    return make_kernel(*plugins, db=db, settings=settings)


async def _server(state, user: str):
    token, _ = await state.tokens.create(user, role="user", mandate_id="m1")
    return build_server(state.kernel, await identify(state.tokens, token))


async def test_alice_calls_her_connections_tool_and_bob_sees_none(state, clickup):
    await add_connection(state.kernel, "clickup", "alice", "a@example.com", token="pk_183_ALICE")
    async with Client(await _server(state, "alice")) as mcp:
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
        found = await mcp.call_tool("searchClickUpTasks", {"query": "call back"})
        bad = await mcp.call_tool("readClickUpTask", {"task": 42})
    assert list(tools) == NATIVE + CLICKUP
    assert tools["searchClickUpTasks"].annotations.read_only_hint is True
    assert tools["writeClickUpTask"].annotations.read_only_hint is False
    assert tools["readClickUpTask"].input_schema["required"] == ["task"]
    assert not found.is_error, found.content[0].text
    text = found.content[0].text
    assert "Call back" in text and "[id: 86c1]" in text
    assert "ada.lovelace@example.com" not in text  # neutralised before it leaves
    assert {r.headers["authorization"] for r in clickup.requests} == {"pk_183_ALICE"}
    # the registry's own validation, as the model in a run would get it
    assert bad.is_error and json.loads(bad.content[0].text)["errorDetails"]["code"] == (
        "INVALID_TYPE"
    )
    seen = len(clickup.requests)
    async with Client(await _server(state, "bob")) as mcp:
        names = [t.name for t in (await mcp.list_tools()).tools]
        refused = await mcp.call_tool("searchClickUpTasks", {"query": "call back"})
    assert names == NATIVE
    assert refused.is_error and refused.content[0].text == "Unknown tool: searchClickUpTasks"
    assert len(clickup.requests) == seen  # nothing reached ClickUp for bob


async def test_a_revoked_connector_and_the_write_policy_hold(state, clickup, monkeypatch):
    await add_connection(state.kernel, "clickup", "alice", "a@example.com", token="pk_183_ALICE")
    monkeypatch.setenv("NYLA_CLICKUP_WRITE", "off")
    async with Client(await _server(state, "alice")) as mcp:
        write = await mcp.call_tool("writeClickUpTask", {"task": "86c1", "status": "complete"})
    assert write.is_error
    assert json.loads(write.content[0].text)["errorDetails"]["code"] == "DENIED"
    assert clickup.writes == []
    access = state.kernel.service_access
    await access.set("user", "alice", "service.connector.clickup", False)
    async with Client(await _server(state, "alice")) as mcp:
        names = [t.name for t in (await mcp.list_tools()).tools]
        refused = await mcp.call_tool("searchClickUpTasks", {"query": "call back"})
    assert names == NATIVE and refused.is_error
    await access.clear("user", "alice", "service.connector.clickup")
    await access.set("mandate", "m1", "service.connector", False)
    async with Client(await _server(state, "alice")) as mcp:
        assert [t.name for t in (await mcp.list_tools()).tools] == NATIVE


async def test_the_host_endpoint_serves_each_caller_their_own_connection_tools(
    state, app, token_for, clickup
):
    await add_connection(state.kernel, "clickup", "alice", "a@example.com", token="pk_183_ALICE")

    async def as_user(user: str):
        headers = await token_for(user)
        transport = httpx.ASGITransport(app=app)
        http = httpx.AsyncClient(transport=transport, base_url="http://host.test", headers=headers)
        with anyio.fail_after(60):
            async with (
                http,
                streamable_http_client("http://host.test/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                names = [t.name for t in (await session.list_tools()).tools]
                found = await session.call_tool("searchClickUpTasks", {"query": "call back"})
        return names, found

    names, found = await as_user("alice")
    assert names == NATIVE + CLICKUP
    assert not found.is_error and "[id: 86c1]" in found.content[0].text
    names, found = await as_user("bob")
    assert names == NATIVE and found.is_error
