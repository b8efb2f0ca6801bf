"""Signing in to an OAuth MCP server from the host (the MCP servers section's sign-in routes):
the test server (``plugins/toolboxes/mcp/tests/oauth_server.py``, a real process that is its
own authorization server and approves at once) is added by alice, who begins the sign-in,
"follows" the authorization redirect back to the host's public callback, and is signed in:
the server's tools are listed, her tokens are sealed at rest. A replayed or forged state is
refused, bob sees none of it, signing out revokes. A mandate's server: the admin's sign-in
lists its tools, a user of the mandate signs in as themselves."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from nyla.sdk import TokenCipher
from nyla.testing.processes import http_server_process

SERVER = Path(__file__).parents[3] / "plugins/toolboxes/mcp/tests/oauth_server.py"
BASE = "/api/settings/sections/mcp"


@pytest.fixture(scope="module", name="oauth_base")
def oauth_base_fixture() -> Iterator[str]:
    """The OAuth test server on 127.0.0.1 at a free port: its base URL."""
    with http_server_process([sys.executable, str(SERVER)], ready_path="/test/state") as base:
        yield base


@pytest.fixture
def kernel(db, make_kernel, provider, memory_plugin, tmp_path, monkeypatch):
    import nyla_toolbox_mcp

    monkeypatch.setenv("NYLA_MCP_DIR", str(tmp_path / "mcp"))
    monkeypatch.setenv("NYLA_SECRET_KEY", TokenCipher.generate_key())
    settings = {"knowledge": {"embedding_model": "scripted:model"}, "data_dir": tmp_path}
    return make_kernel(provider, memory_plugin, nyla_toolbox_mcp, db=db, settings=settings)


async def _approve(client, url: str) -> httpx.Response:
    """The browser at the authorization server (which approves), then back at the host."""
    async with httpx.AsyncClient(timeout=20) as browser:
        approved = await browser.get(url)
    assert approved.status_code == 302, approved.text
    back = urlsplit(approved.headers["location"])
    assert back.path == f"{BASE}/sign-in/callback"
    return await client.get(f"{back.path}?{back.query}")  # public: no credential


async def _rows(db) -> str:
    """Every row of the MCP client's tables, as text (each prefixed by its table)."""
    from sqlalchemy import text

    found = []
    async with db.session() as s:
        for table in ("mcp_servers", "mcp_grants", "mcp_pending_sign_ins"):
            found += [f"{table} {row}" for row in await s.execute(text(f"SELECT * FROM {table}"))]
    return "\n".join(found)


async def test_a_user_signs_in_from_the_host_and_out_again(client, token_for, oauth_base, db):
    alice, bob = await token_for("alice", "user", "m1"), await token_for("bob", "user", "m2")
    body = {"name": "secure", "url": f"{oauth_base}/mcp", "oauth": True}
    added = await client.post(f"{BASE}/user", json=body, headers=alice)
    assert added.status_code == 201, added.text
    assert added.json()["tools"] == [] and added.json()["oauth"] == {
        "clientId": None,
        "scope": None,
    }
    states = await client.get(f"{BASE}/user/sign-in", headers=alice)
    assert states.json() == {"secure": {"signedIn": False}}
    assert (await client.post(f"{BASE}/user/secure/sign-in")).status_code == 401

    begun = await client.post(f"{BASE}/user/secure/sign-in", headers=alice)
    assert begun.status_code == 200, begun.text
    url = begun.json()["authorizationUrl"]
    query = parse_qs(urlsplit(url).query)
    assert query["redirect_uri"] == [f"http://host.test{BASE}/sign-in/callback"]
    assert query["code_challenge_method"] == ["S256"] and query["resource"]

    back = await _approve(client, url)
    assert back.status_code == 303 and back.headers["location"] == "/#mcp?signedIn=secure"
    listed = (await client.get(f"{BASE}/user", headers=alice)).json()
    assert listed[0]["tools"] == ["whoami"]  # listed at the owner's first sign-in
    state = (await client.get(f"{BASE}/user/sign-in", headers=alice)).json()["secure"]
    assert state["signedIn"] is True and state["expired"] is False
    assert (await client.get(f"{BASE}/user/sign-in", headers=bob)).json() == {}

    at_rest = await _rows(db)  # sealed: no token readable at rest
    assert "mcp_grants" in at_rest and "access_token" not in at_rest

    replayed = await client.get(back.request.url.raw_path.decode())
    assert "signInError=" in replayed.headers["location"]  # the state was taken once
    forged = await client.get(f"{BASE}/sign-in/callback?state=forged&code=x")
    assert forged.status_code == 303 and "signInError=" in forged.headers["location"]

    assert (await client.delete(f"{BASE}/user/secure/sign-in", headers=bob)).status_code == 404
    out = await client.delete(f"{BASE}/user/secure/sign-in", headers=alice)
    assert out.json() == {"name": "secure", "signedOut": True, "revoked": True}
    state = (await client.get(f"{BASE}/user/sign-in", headers=alice)).json()
    assert state == {"secure": {"signedIn": False}}


async def test_a_mandates_oauth_server(client, token_for, oauth_base):
    admin = await token_for("mia", "mandateAdmin", "m1")
    alice = await token_for("alice", "user", "m1")
    body = {"name": "crm", "url": f"{oauth_base}/mcp", "oauth": {"scope": "tools"}}
    assert (await client.post(f"{BASE}/mandate", json=body, headers=admin)).status_code == 201

    begun = await client.post(f"{BASE}/mandate/crm/sign-in", headers=alice)
    back = await _approve(client, begun.json()["authorizationUrl"])
    assert back.headers["location"] == "/#mcp?signedIn=crm"
    crm = (await client.get(f"{BASE}/mandate", headers=alice)).json()[0]
    assert crm["tools"] == []  # a user's sign-in does not change the mandate's entry

    begun = await client.post(f"{BASE}/mandate/crm/sign-in", headers=admin)
    assert parse_qs(urlsplit(begun.json()["authorizationUrl"]).query)["scope"] == ["tools"]
    await _approve(client, begun.json()["authorizationUrl"])
    crm = (await client.get(f"{BASE}/mandate", headers=alice)).json()[0]
    assert crm["tools"] == ["whoami"]  # the admin's does
    mine = (await client.get(f"{BASE}/mandate/sign-in", headers=alice)).json()
    assert mine["crm"]["signedIn"] is True

    refused = await client.post(f"{BASE}/user/nothere/sign-in", headers=alice)
    assert refused.status_code == 400 and "no MCP server 'nothere'" in refused.text


async def test_a_configured_client_and_removing_the_server_signs_out(
    client, token_for, oauth_base, db
):
    alice = await token_for("alice", "user", "m1")
    callback = f"http://host.test{BASE}/sign-in/callback"
    async with httpx.AsyncClient(timeout=20) as http:  # the operator registers nyla once
        registered = await http.post(
            f"{oauth_base}/register",
            json={"redirect_uris": [callback], "client_name": "nyla (operator)"},
        )
    client_id, secret = registered.json()["client_id"], registered.json()["client_secret"]
    oauth = {"clientId": client_id, "clientSecret": secret}
    body = {"name": "crm", "url": f"{oauth_base}/mcp", "oauth": oauth}
    added = await client.post(f"{BASE}/user", json=body, headers=alice)
    assert added.status_code == 201 and secret not in added.text
    assert secret not in await _rows(db)  # sealed at rest

    begun = await client.post(f"{BASE}/user/crm/sign-in", headers=alice)
    assert parse_qs(urlsplit(begun.json()["authorizationUrl"]).query)["client_id"] == [client_id]
    back = await _approve(client, begun.json()["authorizationUrl"])
    assert back.headers["location"] == "/#mcp?signedIn=crm"
    assert (await client.get(f"{BASE}/user", headers=alice)).json()[0]["tools"] == ["whoami"]

    async with httpx.AsyncClient(timeout=20) as http:
        live_before = len((await http.get(f"{oauth_base}/test/state")).json()["live"])
        assert (await client.delete(f"{BASE}/user/crm", headers=alice)).status_code == 200
        live_after = len((await http.get(f"{oauth_base}/test/state")).json()["live"])
    assert live_after == live_before - 2  # the access and the refresh token revoked
    assert (await client.get(f"{BASE}/user/sign-in", headers=alice)).json() == {}
