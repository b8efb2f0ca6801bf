"""Browser sign-in end to end (issue 29): the host against a fake authorization server on
loopback (a real HTTP server on 127.0.0.1 that checks the PKCE challenge against the
verifier), driven as a browser would be — start, follow the authorize redirect back to the
callback, land on the page — then the tokens at rest, and a refresh through the fake's token
endpoint once the access token expired. Loopback is allowed the documented way
(``NYLA_EGRESS_ALLOW``)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text

from nyla import hookimpl
from nyla.sdk.connectors import BaseConnector, Item, ItemPage, OAuthConfig
from nyla.testing.processes import http_server_thread

pytestmark = pytest.mark.db

CLIENT_ID = "loop-client-1"


class FakeAuthorizationServer(BaseHTTPRequestHandler):
    """``/authorize`` (redirects back with a code, or ``error=access_denied`` when
    ``deny``), ``/token`` (authorization code with PKCE S256, refresh token) and ``/api/root``
    (answers a valid access token only)."""

    codes: dict[str, dict[str, str]]
    access: set[str]
    refresh: set[str]
    token_requests: list[dict[str, str]]
    deny: bool

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any = None, location: str | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/authorize":
            back = query["redirect_uri"]
            if self.deny:
                params = {"error": "access_denied", "state": query["state"]}
                return self._send(302, location=f"{back}?{urlencode(params)}")
            if query.get("code_challenge_method") != "S256" or query["client_id"] != CLIENT_ID:
                return self._send(400, {"error": "invalid_request"})
            code = secrets.token_urlsafe(12)
            self.codes[code] = {"challenge": query["code_challenge"], "redirect_uri": back}
            params = {"code": code, "state": query["state"]}
            return self._send(302, location=f"{back}?{urlencode(params)}")
        if url.path == "/api/root":
            auth = self.headers.get("Authorization", "")
            if auth.removeprefix("Bearer ") not in self.access:
                return self._send(401, {"error": "invalid_token"})
            return self._send(200, {"items": ["report.txt"]})
        return self._send(404, {"error": "not found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        self.token_requests.append(form)
        if self.path != "/token" or form.get("client_id") != CLIENT_ID:
            return self._send(400, {"error": "invalid_client"})
        if form.get("grant_type") == "authorization_code":
            issued = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if (
                issued is None
                or issued["challenge"] != challenge
                or issued["redirect_uri"] != form.get("redirect_uri")
            ):
                return self._send(400, {"error": "invalid_grant"})
        elif form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh:
                return self._send(400, {"error": "invalid_grant"})
            self.refresh.discard(form["refresh_token"])  # rotated: single use
        else:
            return self._send(400, {"error": "unsupported_grant_type"})
        access, refresh = f"at-{secrets.token_hex(6)}", f"rt-{secrets.token_hex(6)}"
        self.access.add(access)
        self.refresh.add(refresh)
        body = {"access_token": access, "refresh_token": refresh, "expires_in": 3600}
        return self._send(200, {**body, "token_type": "Bearer"})


@pytest.fixture
def idp() -> Iterator[type[FakeAuthorizationServer]]:
    handler = type(
        "Idp",
        (FakeAuthorizationServer,),
        {"codes": {}, "access": set(), "refresh": set(), "token_requests": [], "deny": False},
    )
    with http_server_thread(handler) as base:
        handler.base = base  # type: ignore[attr-defined]
        yield handler


@pytest.fixture
def kernel(db, make_kernel, provider, memory_plugin, tmp_path, idp, monkeypatch):
    """The host's kernel with a connector whose sign-in and API are the fake on loopback."""
    base = idp.base  # type: ignore[attr-defined]

    class LoopCloud(BaseConnector):
        service = "loopcloud"
        label = "Loop Cloud"
        base_url = f"{base}/api"
        oauth = OAuthConfig(
            token_url=f"{base}/token",
            authorize_url=f"{base}/authorize",
            scopes=["files.read", "offline_access"],
            client_id_setting="NYLA_TEST_LOOP_CLIENT",
        )

        async def browse(self, ctx, path: str = "", cursor: str | None = None) -> ItemPage:
            body = await ctx.http.get_json("/root")
            return ItemPage(items=[Item(id=i, title=i) for i in body["items"]])

    class LoopPlugin:
        @hookimpl
        def nyla_connectors(self):
            return [LoopCloud()]

    monkeypatch.setenv("NYLA_TEST_LOOP_CLIENT", CLIENT_ID)
    monkeypatch.setenv("NYLA_EGRESS_ALLOW", "127.0.0.1")  # the fake is on loopback
    msft = pytest.importorskip("nyla_connector_msft")
    return make_kernel(
        provider,
        memory_plugin,
        LoopPlugin(),
        msft,
        db=db,
        settings={
            "knowledge": {"embedding_model": "scripted:model"},
            "data_dir": tmp_path,
            "secret_key": Fernet.generate_key(),
        },
    )


async def browser_sign_in(client, headers, label: str = "") -> tuple[dict, httpx.Response]:
    """Start, follow the authorize URL on the fake (a real HTTP request), come back to the
    callback; the start answer and the callback's answer."""
    started = await client.post(
        "/api/connections/oauth/loopcloud/start", json={"label": label}, headers=headers
    )
    assert started.status_code == 200, started.text
    start = started.json()
    async with httpx.AsyncClient(timeout=10) as browser:
        authorize = await browser.get(start["authorizeUrl"])
    assert authorize.status_code == 302, authorize.text
    back = urlparse(authorize.headers["location"])
    assert back.path == "/api/connections/oauth/loopcloud/callback"
    callback = await client.get(f"{back.path}?{back.query}")
    return start, callback


def landing(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 303, response.text
    page, _, query = response.headers["location"].partition("?")
    assert page == "/#sources"
    return {k: v[0] for k, v in parse_qs(query).items()}


async def count(state, table: str) -> int:
    async with state.kernel.db.session() as s:
        return int((await s.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one())


async def test_sign_in_stores_tokens_encrypted_and_refreshes_them(state, client, token_for, idp):
    alice = await token_for("alice")
    start, callback = await browser_sign_in(client, alice, label="My cloud")
    authorize = parse_qs(urlparse(start["authorizeUrl"]).query)
    assert authorize["code_challenge_method"] == ["S256"] and authorize["state"] == [start["state"]]
    assert "adminConsentUrl" not in start
    connected = landing(callback)["connected"]
    [exchange] = idp.token_requests
    assert exchange["grant_type"] == "authorization_code" and exchange["code_verifier"]
    listed = (await client.get("/api/connections", headers=alice)).json()["connections"]
    assert [(c["id"], c["label"], c["service"]) for c in listed] == [
        (connected, "My cloud", "loopcloud")
    ]
    [first_access] = idp.access
    [first_refresh] = idp.refresh
    async with state.kernel.db.session() as s:
        row = (await s.execute(text("SELECT * FROM connection_credential"))).mappings().one()
    assert first_access not in str(dict(row)) and first_refresh not in str(dict(row))
    assert await count(state, "oauth_pending") == 0  # the sign-in is used up

    async with state.kernel.db.session() as s:
        await s.execute(
            text("UPDATE connection_credential SET expires_at = now() - interval '1 hour'")
        )
    browsed = await client.get(f"/api/connections/{connected}/browse", headers=alice)
    assert browsed.status_code == 200, browsed.text
    assert [i["title"] for i in browsed.json()["items"]] == ["report.txt"]
    refresh = idp.token_requests[-1]
    assert refresh["grant_type"] == "refresh_token" and refresh["refresh_token"] == first_refresh
    async with state.kernel.db.session() as s:
        grant = await state.kernel.connections.store.read_grant(s, connected)
    assert grant is not None and grant.access_token != first_access
    assert grant.access_token in idp.access and grant.refresh_token in idp.refresh


async def test_a_state_is_used_once(state, client, token_for):
    alice = await token_for("alice")
    _, callback = await browser_sign_in(client, alice)
    assert "connected" in landing(callback)
    replay = await client.get(callback.request.url.path + "?" + callback.request.url.query.decode())
    assert "start the sign-in again" in landing(replay)["oauthError"]
    assert await count(state, "user_connection") == 1
    forged = await client.get(
        "/api/connections/oauth/loopcloud/callback", params={"state": "forged", "code": "x"}
    )
    assert "oauthError" in landing(forged)


async def test_a_wrong_verifier_is_refused_and_nothing_stored(state, client, token_for, idp):
    alice = await token_for("alice")
    started = await client.post("/api/connections/oauth/loopcloud/start", headers=alice)
    wrong = state.kernel.connections.store.cipher.encrypt("not-the-verifier-" + "x" * 40)
    async with state.kernel.db.session() as s:
        await s.execute(text("UPDATE oauth_pending SET verifier = :v"), {"v": wrong})
    async with httpx.AsyncClient(timeout=10) as browser:
        back = urlparse((await browser.get(started.json()["authorizeUrl"])).headers["location"])
    callback = await client.get(f"{back.path}?{back.query}")
    error = landing(callback)["oauthError"]
    assert "could not be completed" in error and "invalid_grant" in error
    assert idp.access == set()  # the fake issued nothing
    assert await count(state, "user_connection") == 0
    assert await count(state, "connection_credential") == 0


async def test_a_refused_or_late_sign_in_goes_back_to_the_page(state, client, token_for, idp):
    alice = await token_for("alice")
    idp.deny = True
    _, callback = await browser_sign_in(client, alice)
    assert "access_denied" in landing(callback)["oauthError"]
    idp.deny = False
    state.kernel.connections.sign_in.ttl_s = 0
    _, late = await browser_sign_in(client, alice)
    assert "took too long" in landing(late)["oauthError"]
    assert idp.token_requests == [] and await count(state, "user_connection") == 0


async def test_microsoft_offers_the_admin_consent_page(client, token_for, monkeypatch):
    monkeypatch.setenv("NYLA_MSFT_CLIENT_ID", "msft-app-9")
    alice = await token_for("alice")
    started = await client.post(
        "/api/connections/oauth/msft/start",
        json={"settings": {"tenant": "contoso.onmicrosoft.com"}},
        headers=alice,
    )
    assert started.status_code == 200, started.text
    body = started.json()
    consent = urlparse(body["adminConsentUrl"])
    assert (consent.netloc, consent.path) == (
        "login.microsoftonline.com",
        "/contoso.onmicrosoft.com/adminconsent",
    )
    query = parse_qs(consent.query)
    assert query["client_id"] == ["msft-app-9"]
    assert query["redirect_uri"][0].endswith("/api/connections/oauth/msft/callback")
    assert urlparse(body["authorizeUrl"]).path == "/contoso.onmicrosoft.com/oauth2/v2.0/authorize"
    listed = (await client.get("/api/connectors", headers=alice)).json()["connectors"]
    msft = next(c for c in listed if c["service"] == "msft")
    assert (msft["auth"], msft["oauthConfigured"], msft["adminConsent"]) == ("oauth", True, True)
    # a user may not point the sign-in at a proxy of their choosing
    proxied = await client.post(
        "/api/connections/oauth/msft/start",
        json={"settings": {"baseUrl": "https://proxy.test"}},
        headers=alice,
    )
    assert proxied.status_code == 403, proxied.text
