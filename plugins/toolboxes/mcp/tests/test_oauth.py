"""OAuth for HTTP MCP servers against a real server process that is its own authorization
server (``oauth_server.py``, the SDK's ``mcp.server.auth``; approval is automatic, so the
"browser" here is an HTTP client following the authorization redirect): discovery, dynamic
registration, PKCE, the code and the tokens, a refresh after expiry, sign-out with
revocation; a wrong state, a reused state and a token for another resource refused."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx
import pytest
from sqlalchemy import text

from nyla_toolbox_mcp.cli import add_server
from nyla_toolbox_mcp.cli_oauth import login_flow
from nyla_toolbox_mcp.errors import OAuthError, SignInRequired
from nyla_toolbox_mcp.servers import McpServer, OAuthSettings
from nyla_toolbox_mcp.signin import complete, sign_out, start, state_of


def browser(tamper=None, seen: list[str] | None = None):
    """A person who approves: open the authorization URL (``tamper`` may change it first),
    follow the redirect back to nyla's callback."""

    async def show(url: str) -> None:
        if seen is not None:
            seen.append(url)
        async with httpx.AsyncClient(timeout=20) as http:
            approved = await http.get(tamper(url) if tamper else url)
            assert approved.status_code == 302, approved.text
            back = approved.headers["location"]
            if seen is not None:
                seen.append(back)
            await http.get(back)

    return show


def secure(base: str) -> McpServer:
    return McpServer(
        name="secure",
        transport="http",
        url=f"{base}/mcp",
        oauth=OAuthSettings(),
        timeout_s=20,
        start_timeout_s=20,
    )


async def _whoami(store, server, user="ada"):
    from nyla_toolbox_mcp.client import call_tool
    from nyla_toolbox_mcp.oauth_session import authorized

    result = await authorized(
        store.grants, user, server, lambda auth: call_tool(server, "whoami", {}, auth)
    )
    return result.content[0].text


async def _rows(store) -> list[str]:
    """Every row of the plugin's tables as text."""
    async with store.db.session() as s:
        found = []
        for table in ("mcp_servers", "mcp_grants", "mcp_pending_sign_ins"):
            found += [str(r) for r in await s.execute(text(f"SELECT * FROM {table}"))]
        return found


async def _server_state(base: str) -> dict:
    async with httpx.AsyncClient(timeout=10) as http:
        return (await http.get(f"{base}/test/state")).json()


async def test_sign_in_call_refresh_and_sign_out(store, oauth_base):
    stored = await add_server(store, "ada", secure(oauth_base))
    assert stored.tools == []  # nobody signed in yet: listed at the first sign-in
    assert await state_of(store, "ada", stored) == {"signedIn": False}
    seen: list[str] = []
    server = await login_flow(store, "user", "ada", "secure", "ada", show=browser(seen=seen))
    assert [t.name for t in server.tools] == ["whoami"]
    query = parse_qs(urlsplit(seen[0]).query)
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) == 43
    assert query["resource"] == [f"{oauth_base}/mcp"]  # RFC 8707
    assert query["redirect_uri"][0].startswith("http://127.0.0.1:")
    assert (await _server_state(oauth_base))["clients"] >= 1  # registered dynamically
    grant = await store.grants.get("ada", "secure")
    access, refresh = grant.tokens["access_token"], grant.refresh_token
    for row in await _rows(store):  # sealed: no token readable at rest
        assert access not in row and refresh not in row and "access_token" not in row
    assert await _whoami(store, server) == "you are ada, signed in with OAuth"

    # the access token expires (at the server, and as nyla knows it): refreshed, rotated
    async with httpx.AsyncClient(timeout=10) as http:
        await http.post(f"{oauth_base}/test/expire")
    await store.grants.put("ada", "secure", grant.model_copy(update={"expires_at": 1.0}))
    assert await _whoami(store, server) == "you are ada, signed in with OAuth"
    renewed = await store.grants.get("ada", "secure")
    assert len(await _rows(store)) == 2  # the server and the one sign-in
    assert renewed.tokens["access_token"] != access and renewed.refresh_token != refresh
    assert not renewed.expired()
    assert (await _server_state(oauth_base))["refreshed"] == 1

    # the server drops the token early (nyla still takes it for valid): refreshed once, retried
    async with httpx.AsyncClient(timeout=10) as http:
        await http.post(f"{oauth_base}/test/expire")
    assert await _whoami(store, server) == "you are ada, signed in with OAuth"
    assert (await _server_state(oauth_base))["refreshed"] == 2

    last = await store.grants.get("ada", "secure")
    done = await sign_out(store, "ada", "secure")
    assert done == {"signedOut": True, "revoked": True}
    live = (await _server_state(oauth_base))["live"]
    assert last.tokens["access_token"] not in live and last.refresh_token not in live
    assert await store.grants.get("ada", "secure") is None
    with pytest.raises(SignInRequired):
        await _whoami(store, server)


async def test_a_wrong_or_reused_state_is_refused(store, oauth_base):
    await add_server(store, "ada", secure(oauth_base))

    def forge(url: str) -> str:
        parts = urlsplit(url)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        query["state"] = "forged-" + query["state"][:8]
        return urlunsplit(parts._replace(query=urlencode(query)))

    with pytest.raises(OAuthError, match="state does not match"):
        await login_flow(store, "user", "ada", "secure", "ada", show=browser(forge))
    assert await store.grants.get("ada", "secure") is None

    # the callback route's view: a state nobody began, one taken twice, another user's
    with pytest.raises(OAuthError, match="unknown, used or expired"):
        await complete(store, state="never-begun", code="x")
    _url, pending = await start(
        store,
        user_id="ada",
        scope="user",
        owner="ada",
        name="secure",
        redirect_uri="http://127.0.0.1:9/callback",
        relist=False,
    )
    with pytest.raises(OAuthError, match="another user"):
        await complete(store, state=pending.state, code="x", user_id="bob")
    with pytest.raises(OAuthError, match="unknown, used or expired"):
        await complete(store, state=pending.state, code="x", user_id="ada")  # taken once


async def test_a_token_for_another_resource_is_refused(store, oauth_base):
    await add_server(store, "ada", secure(oauth_base))
    other = f"{oauth_base}/other"

    def elsewhere(url: str) -> str:  # the token is asked for another resource than the server
        parts = urlsplit(url)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        query["resource"] = other
        return urlunsplit(parts._replace(query=urlencode(query)))

    signed_in = await login_flow(store, "user", "ada", "secure", "ada", show=browser(elsewhere))
    assert signed_in.tools == []  # the server refused to list its tools with that token
    grant = await store.grants.get("ada", "secure")
    assert grant is not None  # tokens were issued, but for ``other``
    server = await store.get("ada", "secure")
    with pytest.raises(SignInRequired, match="refused"):
        await _whoami(store, server)


async def test_resource_metadata_naming_another_resource_is_refused(store):
    import httpx2

    from nyla_toolbox_mcp.oauth_flow import discover

    prm = {"resource": "https://evil.example/mcp", "authorization_servers": ["https://as.test"]}

    def vendor(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/mcp":
            meta = 'Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp"'
            return httpx2.Response(401, headers={"WWW-Authenticate": meta})
        return httpx2.Response(200, json=prm)

    server = McpServer(
        name="x", transport="http", url="https://mcp.test/mcp", oauth=OAuthSettings()
    )
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(vendor)) as http:
        with pytest.raises(OAuthError, match="another resource"):
            await discover(http, server)


async def test_oauth_settings_are_checked_and_the_secret_sealed(store):
    with pytest.raises(ValueError, match="http servers only"):
        McpServer(name="x", transport="stdio", command="x", oauth=OAuthSettings())
    with pytest.raises(ValueError, match="needs its client id"):
        McpServer(
            name="x", transport="http", url="https://x", oauth=OAuthSettings(client_secret="s")
        )
    server = McpServer(
        name="x",
        transport="http",
        url="https://x/mcp",
        oauth=OAuthSettings(client_id="nyla-app", client_secret="sup3rsecret", scope="read"),
    )
    await store.put("ada", server)
    assert "sup3rsecret" not in json.dumps(await _rows(store))
    assert (await store.get("ada", "x")).oauth.client_secret == "sup3rsecret"
    shown = json.dumps((await store.get("ada", "x")).public())
    assert "sup3rsecret" not in shown and '"clientId": "nyla-app"' in shown


async def test_an_expired_sign_in_that_cannot_be_refreshed_needs_a_new_one(store, oauth_base):
    await add_server(store, "ada", secure(oauth_base))
    server = await login_flow(store, "user", "ada", "secure", "ada", show=browser())
    grant = await store.grants.get("ada", "secure")
    spent = dict(grant.tokens, refresh_token="rt-spent")  # e.g. used by a copy elsewhere
    await store.grants.put(
        "ada", "secure", grant.model_copy(update={"tokens": spent, "expires_at": 1})
    )
    with pytest.raises(SignInRequired, match="expired and was not renewed"):
        await _whoami(store, server)
    assert (await state_of(store, "ada", server))["expired"] is True


async def test_a_server_signed_in_through_one_store_has_its_tools_in_anothers_next_run(
    store, oauth_base
):
    from nyla.sdk import RunContext
    from nyla_toolbox_mcp.cli import opened
    from nyla_toolbox_mcp.run_toolboxes import McpToolboxes

    other = McpToolboxes(id="mcp")  # what a second process (nyla worker) registers
    async with opened() as elsewhere:
        other.use(elsewhere)
        ada = RunContext(user_id="ada")
        assert await other.for_run(ada) == []
        await add_server(store, "ada", secure(oauth_base))
        (toolbox,) = await other.for_run(ada)  # added: a toolbox of the next run there
        assert toolbox.id == "mcp:secure" and toolbox.tools == []
        await login_flow(store, "user", "ada", "secure", "ada", show=browser())
        (toolbox,) = await other.for_run(ada)  # signed in: listed, no restart needed
        assert [t.name for t in toolbox.tools] == ["mcpSecure_whoami"]
        assert await other.for_run(RunContext(user_id="bob")) == []


async def test_two_processes_refreshing_one_sign_in_at_once_rotate_it_once(store, oauth_base):
    import anyio

    from nyla_toolbox_mcp.cli import opened
    from nyla_toolbox_mcp.oauth_session import usable_grant

    await add_server(store, "ada", secure(oauth_base))
    server = await login_flow(store, "user", "ada", "secure", "ada", show=browser())
    grant = await store.grants.get("ada", "secure")
    await store.grants.put("ada", "secure", grant.model_copy(update={"expires_at": 1.0}))
    before = (await _server_state(oauth_base))["refreshed"]
    got: list[str] = []

    async def refresh_in(store_of_a_process) -> None:
        fresh = await usable_grant(store_of_a_process.grants, "ada", server)
        got.append(fresh.tokens["access_token"])

    # two engines (two processes' pools), each refreshing at once
    async with opened() as first, opened() as second, anyio.create_task_group() as tg:
        tg.start_soon(refresh_in, first)
        tg.start_soon(refresh_in, second)
    assert (await _server_state(oauth_base))["refreshed"] == before + 1  # one rotation
    assert len(got) == 2 and got[0] == got[1] != grant.tokens["access_token"]
    assert await _whoami(store, server) == "you are ada, signed in with OAuth"
