"""OAuth for the MCP endpoint, end to end: the official SDK's ``OAuthClientProvider`` against a
live ``nyla serve`` on loopback discovers nyla's authorization server from the 401, registers,
sends the person to the consent page (its redirect handler drives the page's API as alice,
over HTTP with her API token), exchanges the code and then lists tools and searches as alice,
never seeing bob's notes. Then what must be refused is: a wrong PKCE verifier, a code used
twice (which also ends the grant it gave), a foreign redirect URI, a wrong resource, an
access token anywhere but ``/mcp``, an expired one, a revoked one, a replayed refresh token."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx
import pytest
import pytest_asyncio
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from sqlalchemy import update

from nyla_host.tables import ApiTokenRow
from nyla_host.tokens import TokenStore

from .mcp_wire import INITIALIZE
from .served import Served
from .test_mcp_http import _prepare

pytestmark = [pytest.mark.db, pytest.mark.slow, pytest.mark.long]

REDIRECT = "http://127.0.0.1:33418/callback"
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest_asyncio.fixture
async def served(embedded_pg, tmp_path):
    server = Served(embedded_pg, tmp_path)
    try:
        yield server
    finally:
        server.stop()
        await server.drop()


class Memory:
    """The SDK's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def consent(url: str, authorization_url: str, person: str, *, approve: bool = True) -> str:
    """What the person's browser does: follow the authorization URL to the consent page, read
    what is asked and decide (the page's script calls these routes with the person's token).
    Returns where the browser is sent back to."""
    signed_in = {"Authorization": f"Bearer {person}"}
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        start = await http.get(authorization_url)
        assert start.status_code == 302, start.text
        page_url = start.headers["location"]
        assert page_url.startswith(f"{url}/oauth/consent?request="), page_url
        page = await http.get(page_url)
        assert page.status_code == 200 and "/static/consent.js" in page.text
        request_id = parse_qs(urlsplit(page_url).query)["request"][0]
        asked = await http.get(f"/api/oauth/requests/{request_id}", headers=signed_in)
        assert asked.status_code == 200, asked.text
        assert asked.json()["clientName"] == "agent-x"
        assert asked.json()["redirectHost"] == "127.0.0.1:33418"
        # without the person's bearer header, no decision (what a forged page could send)
        forged = await http.post(f"/api/oauth/requests/{request_id}", json={"approve": True})
        assert forged.status_code == 401
        decided = await http.post(
            f"/api/oauth/requests/{request_id}", json={"approve": approve}, headers=signed_in
        )
        assert decided.status_code == 200, decided.text
        again = await http.post(
            f"/api/oauth/requests/{request_id}", json={"approve": approve}, headers=signed_in
        )
        assert again.status_code == 404  # decided once
        return decided.json()["redirect"]


def sdk_provider(url: str, person: str, storage: Memory) -> OAuthClientProvider:
    """The SDK's OAuth client, whose browser step is :func:`consent` as ``person``."""
    sent_back: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        sent_back.append(await consent(url, authorization_url, person))

    async def callback_handler() -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(sent_back[-1]).query)
        return AuthorizationCodeResult(
            code=query["code"][0], state=query["state"][0], iss=query["iss"][0]
        )

    metadata = OAuthClientMetadata(client_name="agent-x", redirect_uris=[REDIRECT])
    return OAuthClientProvider(f"{url}/mcp", metadata, storage, redirect_handler, callback_handler)


async def search_with_oauth(url: str, person: str, storage: Memory) -> tuple[list[str], list]:
    """Tool names and hits for "zephyr project" through the SDK's client with OAuth."""
    client = create_mcp_http_client(auth=sdk_provider(url, person, storage))
    with anyio.fail_after(90):
        async with (
            client,
            streamable_http_client(f"{url}/mcp", http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
            found = await session.call_tool("searchKnowledge", {"query": "zephyr project"})
    assert not found.is_error, found
    return [t.name for t in tools], json.loads(found.content[0].text)


async def test_the_sdk_client_signs_in_with_oauth_and_sees_only_its_persons_data(
    served, make_kernel
):
    tokens = await _prepare(served, make_kernel)
    served.start()
    storage = Memory()
    names, hits = await search_with_oauth(served.url, tokens["alice"], storage)
    assert names == ["searchKnowledge", "listDataSources", "searchDataSource"]
    assert [h["fileName"] for h in hits] == ["alice-notes.txt"]
    assert "secret plan" not in json.dumps(hits)
    assert storage.client is not None and storage.client.token_endpoint_auth_method == "none"
    access = storage.tokens.access_token
    assert access.startswith("nyla_") and storage.tokens.refresh_token
    # the access token is in alice's token list, bound to /mcp, and good nowhere else
    db = served.database()
    try:
        listed = {t.id: t for t in await TokenStore(db).list()}
    finally:
        await db.dispose()
    token_id = access.split("_")[1]
    assert listed[token_id].user_id == "alice" and listed[token_id].name == "MCP: agent-x"
    assert listed[token_id].audience == f"{served.url}/mcp"
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        bearer = {"Authorization": f"Bearer {access}"}
        assert (await http.get("/api/me", headers=bearer)).status_code == 401
        assert (await http.get("/api/files", headers=bearer)).status_code == 401
        assert (
            await http.post("/mcp", json=INITIALIZE, headers={**ACCEPT, **bearer})
        ).status_code == 200
    # the same client, stored tokens kept, needs no second consent
    names, _ = await search_with_oauth(served.url, tokens["alice"], storage)
    assert "searchKnowledge" in names


async def test_the_401_names_the_metadata_and_the_metadata_names_nyla(served):
    await served.prepare()
    served.start()
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        refused = await http.post("/mcp", json=INITIALIZE, headers=ACCEPT)
        assert refused.status_code == 401
        where = f"{served.url}/.well-known/oauth-protected-resource/mcp"
        challenge = f'Bearer resource_metadata="{where}", scope="mcp"'
        assert refused.headers["www-authenticate"] == challenge
        for path in (
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ):
            resource = (await http.get(path)).json()
            assert resource["resource"] == f"{served.url}/mcp"
            assert resource["authorization_servers"] == [served.url]
        server = (await http.get("/.well-known/oauth-authorization-server")).json()
        assert server["issuer"] == served.url
        assert server["code_challenge_methods_supported"] == ["S256"]
        assert server["token_endpoint"] == f"{served.url}/oauth/token"


class Flow:
    """The protocol by hand: register, authorize as a person, exchange; for the refusals."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.client_id = ""

    async def register(self, redirect_uris: list[str] | None = None) -> httpx.Response:
        body = {"client_name": "agent-x", "redirect_uris": redirect_uris or [REDIRECT]}
        answer = await self.http.post("/oauth/register", json=body)
        if answer.status_code == 201:
            self.client_id = answer.json()["client_id"]
        return answer

    def authorization_url(self, challenge: str, **extra: str) -> str:
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": REDIRECT,
            "state": "s-123",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": f"{self.url}/mcp",
            **extra,
        }
        return f"/oauth/authorize?{urlencode({k: v for k, v in params.items() if v})}"

    async def code(self, person: str, **extra: str) -> tuple[str, str]:
        """A code approved by ``person`` and its PKCE verifier."""
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        url = self.authorization_url(challenge.decode().rstrip("="), **extra)
        back = await consent(self.url, url, person)
        query = parse_qs(urlsplit(back).query)
        assert query["state"] == ["s-123"] and query["iss"] == [self.url]
        return query["code"][0], verifier

    async def exchange(self, code: str, verifier: str, **extra: str) -> httpx.Response:
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": self.client_id,
            "code_verifier": verifier,
            "resource": f"{self.url}/mcp",
            **extra,
        }
        return await self.http.post("/oauth/token", data=form)

    async def refresh(self, refresh_token: str) -> httpx.Response:
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        return await self.http.post("/oauth/token", data={**form, "client_id": self.client_id})

    async def mcp_status(self, access: str) -> int:
        headers = {**ACCEPT, "Authorization": f"Bearer {access}"}
        return (await self.http.post("/mcp", json=INITIALIZE, headers=headers)).status_code


async def test_what_the_authorization_server_refuses(served):
    alice = await served.prepare()
    served.start()
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        flow = Flow(http, served.url)
        for foreign in (["http://evil.example/cb"], ["javascript:alert(1)"], ["https://a/#x"]):
            refused = await flow.register(foreign)
            assert refused.status_code == 400, refused.text
            assert refused.json()["error"] == "invalid_redirect_uri"
        assert (await flow.register()).status_code == 201
        # a redirect URI the client did not register: answered here, never redirected there
        url = flow.authorization_url("x" * 43, redirect_uri="https://evil.example/cb")
        start = await http.get(url)
        assert start.status_code == 400 and "evil" not in start.headers.get("location", "")
        # a resource that is not this MCP endpoint: back to the client with invalid_target
        start = await http.get(flow.authorization_url("x" * 43, resource="https://other/mcp"))
        assert start.status_code == 302
        back = parse_qs(urlsplit(start.headers["location"]).query)
        assert back["error"] == ["invalid_target"] and back["state"] == ["s-123"]
        # no PKCE, or plain PKCE: refused
        for pkce in ({"code_challenge_method": "plain"}, {"code_challenge": ""}):
            start = await http.get(flow.authorization_url("x" * 43, **pkce))
            assert start.status_code == 302, start.text
            assert parse_qs(urlsplit(start.headers["location"]).query)["error"] == [
                "invalid_request"
            ]
        # a wrong verifier: refused, and the code still belongs to the right one
        code, verifier = await flow.code(alice)
        wrong = await flow.exchange(code, secrets.token_urlsafe(48))
        assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
        # a wrong resource at the token endpoint
        wrong = await flow.exchange(code, verifier, resource="https://other/mcp")
        assert wrong.json()["error"] == "invalid_target"
        issued = await flow.exchange(code, verifier)
        assert issued.status_code == 200, issued.text
        first = issued.json()
        assert first["token_type"] == "Bearer" and first["expires_in"] == 3600
        assert issued.headers["cache-control"] == "no-store"
        assert await flow.mcp_status(first["access_token"]) == 200
        # the code again: refused, and the grant it gave is revoked at once
        reused = await flow.exchange(code, verifier)
        assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
        assert await flow.mcp_status(first["access_token"]) == 401
        assert (await flow.refresh(first["refresh_token"])).status_code == 400


async def test_refresh_rotates_and_revocation_cuts_access_at_once(served):
    alice = await served.prepare()
    served.start()
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        flow = Flow(http, served.url)
        await flow.register()
        code, verifier = await flow.code(alice)
        first = (await flow.exchange(code, verifier)).json()
        rotated = await flow.refresh(first["refresh_token"])
        assert rotated.status_code == 200, rotated.text
        second = rotated.json()
        assert second["refresh_token"] != first["refresh_token"]
        assert second["access_token"].split("_")[1] == first["access_token"].split("_")[1]
        assert await flow.mcp_status(first["access_token"]) == 401  # the old secret is gone
        assert await flow.mcp_status(second["access_token"]) == 200
        # the replaced refresh token, replayed: refused, and the grant ends
        replay = await flow.refresh(first["refresh_token"])
        assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
        assert await flow.mcp_status(second["access_token"]) == 401
        assert (await flow.refresh(second["refresh_token"])).status_code == 400

        # a second grant, revoked from the token list (nyla tokens revoke): cut at once
        code, verifier = await flow.code(alice)
        grant = (await flow.exchange(code, verifier)).json()
        token_id = grant["access_token"].split("_")[1]
        db = served.database()
        try:
            assert await TokenStore(db).revoke(token_id)
        finally:
            await db.dispose()
        assert await flow.mcp_status(grant["access_token"]) == 401
        assert (await flow.refresh(grant["refresh_token"])).json()["error"] == "invalid_grant"

        # a third, revoked by the client (RFC 7009) with its refresh token
        code, verifier = await flow.code(alice)
        grant = (await flow.exchange(code, verifier)).json()
        form = {"token": grant["refresh_token"], "client_id": flow.client_id}
        assert (await http.post("/oauth/revoke", data=form)).status_code == 200
        assert await flow.mcp_status(grant["access_token"]) == 401

        # a fourth, expired (never used before, so no host has it cached)
        code, verifier = await flow.code(alice)
        grant = (await flow.exchange(code, verifier)).json()
        db = served.database()
        try:
            async with db.session() as s:
                await s.execute(
                    update(ApiTokenRow)
                    .where(ApiTokenRow.id == grant["access_token"].split("_")[1])
                    .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
                )
        finally:
            await db.dispose()
        assert await flow.mcp_status(grant["access_token"]) == 401
        # an expired access token is what a refresh is for
        assert (
            await flow.mcp_status(
                (await flow.refresh(grant["refresh_token"])).json()["access_token"]
            )
            == 200
        )
