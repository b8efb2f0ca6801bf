"""``nyla mcp serve``'s server, reached with the official SDK's client: user A searches
their knowledge and never sees user B's; no token, or a wrong one, is denied."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from nyla import RunContext
from nyla_host.mcp_server import NotAuthenticated, build_server, identify

TOOLS = ["searchKnowledge", "listDataSources", "searchDataSource"]


async def _index(kernel, file_id: str, user: str, text: bytes) -> None:
    context = RunContext(user_id=user, mandate_id="m1")
    item = await kernel.files.save(f"{file_id}.txt", text, context, mime_type="text/plain")
    done = await kernel.knowledge.indexing.index_file(item, text, context=context)
    assert done.status != "failed", done


async def test_user_a_searches_their_knowledge_and_never_sees_user_bs(state):
    kernel = state.kernel
    await _index(kernel, "alice-notes", "alice", b"the zephyr project budget is 40k")
    await _index(kernel, "bob-notes", "bob", b"the zephyr project secret plan of bob")
    token, _ = await state.tokens.create("alice", role="user", mandate_id="m1")
    identity = await identify(state.tokens, token)
    async with Client(build_server(kernel, identity)) as client:
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == TOOLS
        assert all(t.annotations.read_only_hint is True for t in tools)
        found = await client.call_tool("searchKnowledge", {"query": "zephyr project", "k": 10})
    assert not found.is_error
    hits = json.loads(found.content[0].text)
    assert [h["fileName"] for h in hits] == ["alice-notes.txt"]
    assert "secret plan" not in found.content[0].text


async def test_hits_are_neutralised_before_they_leave(state):
    await _index(state.kernel, "mail", "alice", b"zephyr contact: ada.lovelace@example.com")
    token, _ = await state.tokens.create("alice", role="user", mandate_id="m1")
    server = build_server(state.kernel, await identify(state.tokens, token))
    async with Client(server) as client:
        found = await client.call_tool("searchKnowledge", {"query": "zephyr contact"})
    assert "zephyr" in found.content[0].text
    assert "ada.lovelace@example.com" not in found.content[0].text


async def test_data_sources_are_listed_and_searched_only_by_their_owner(state, client, token_for):
    from .test_sources import _source, _wait_jobs

    alice = await token_for("alice")
    _, ds_id = await _source(client, alice)
    on = await client.patch(
        f"/api/datasources/{ds_id}/rag-index", json={"enabled": True}, headers=alice
    )
    assert on.status_code == 200, on.text
    await _wait_jobs(state, alice, client)
    await _index(state.kernel, "uploaded", "alice", b"the travel policy of the upload")
    token, _ = await state.tokens.create("alice", role="user", mandate_id="m1")
    async with Client(build_server(state.kernel, await identify(state.tokens, token))) as mcp:
        listed = json.loads((await mcp.call_tool("listDataSources", {})).content[0].text)
        args = {"source": ds_id, "query": "travel policy train"}
        found = await mcp.call_tool("searchDataSource", args)
        everywhere = await mcp.call_tool("searchKnowledge", {"query": "travel policy train"})
    (source,) = listed
    assert source["id"] == ds_id and source["service"] == "memfs" and source["searchable"]
    assert not found.is_error, found.content[0].text
    # the upload matches too, but it is not in the data source
    assert "uploaded.txt" in {h["fileName"] for h in json.loads(everywhere.content[0].text)}
    names = [h["fileName"] for h in json.loads(found.content[0].text)]
    assert names[0] == "handbook.txt" and set(names) <= {"handbook.txt", "notes.txt"}
    bob_token, _ = await state.tokens.create("bob", role="user", mandate_id="m1")
    async with Client(build_server(state.kernel, await identify(state.tokens, bob_token))) as mcp:
        assert json.loads((await mcp.call_tool("listDataSources", {})).content[0].text) == []
        refused = await mcp.call_tool("searchDataSource", args)
        empty = await mcp.call_tool("searchKnowledge", {"query": "  "})
    assert refused.is_error and f"no data source {ds_id}" in refused.content[0].text
    assert empty.is_error and empty.content[0].text.endswith(": query is empty")


@pytest.mark.parametrize("token", [None, "", "nyla_wrong"])
async def test_no_valid_token_is_denied(state, token):
    with pytest.raises(NotAuthenticated):
        await identify(state.tokens, token)


async def test_a_revoked_token_is_denied(state):
    token, info = await state.tokens.create("alice", role="user", mandate_id="m1")
    await state.tokens.revoke(info.id)
    with pytest.raises(NotAuthenticated):
        await identify(state.tokens, token)


def test_nyla_mcp_serve_without_a_token_serves_nothing(monkeypatch):
    from nyla.testing import invoke_cli

    monkeypatch.delenv("NYLA_TOKEN", raising=False)
    done = invoke_cli(["mcp", "serve"])
    assert done.exit_code != 0 and "NYLA_TOKEN" in done.output
    listed = invoke_cli(["mcp", "--help"])
    assert all(name in listed.output for name in ("serve", "add", "list", "remove"))


async def test_nyla_mcp_serve_over_stdio_answers_the_sdk_client_as_the_tokens_user(state, db):
    """The real command in its own process, over stdio, as the SDK's client starts it."""
    import os
    import sys
    from pathlib import Path

    import anyio
    from mcp import StdioServerParameters

    # indexed with the embedding model a plain ``nyla`` process uses, as that one searches
    from nyla.testing import installed_kernel

    kernel = installed_kernel(db)
    await _index(kernel, "alice-notes", "alice", b"the zephyr project budget is 40k")
    await _index(kernel, "bob-notes", "bob", b"the zephyr project secret plan of bob")
    token, _ = await state.tokens.create("alice", role="user", mandate_id="m1")
    env = {
        **os.environ,
        "NYLA_TOKEN": token,
        "NYLA_DATABASE_URL": str(kernel.db.url),
        "NYLA_DATABASE_SCHEMA": kernel.db.schema,
    }
    params = StdioServerParameters(
        command=str(Path(sys.executable).with_name("nyla")), args=["mcp", "serve"], env=env
    )
    with anyio.fail_after(180):
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            found = await client.call_tool("searchKnowledge", {"query": "zephyr project"})
    assert names == TOOLS
    assert [h["fileName"] for h in json.loads(found.content[0].text)] == ["alice-notes.txt"]
