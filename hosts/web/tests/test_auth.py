"""Deny by default: every route needs an identity except health, the page and the OAuth
callback; tokens are stored hashed; roles gate the inventories; OIDC JWTs and host auth
hooks are accepted."""

from __future__ import annotations

import asyncio
import re
import time

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI
from fastapi.routing import APIRoute
from sqlalchemy import select

from nyla_host.app import add_page, build_state, mount
from nyla_host.auth import PUBLIC_PATHS, declared_role
from nyla_host.identity import Identity, Role
from nyla_host.oauth.cors import is_preflight
from nyla_host.oidc import OidcSettings, OidcVerifier
from nyla_host.tables import ApiTokenRow
from nyla_host.tokens import CACHE_TTL_S, TokenStore

pytestmark = pytest.mark.db


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


async def test_every_route_denies_without_identity(app, client):
    assert all(isinstance(r, APIRoute) for r in app.routes)  # no opaque mounts or includes
    routes = list(app.routes)
    assert len(routes) > 25
    checked = 0
    for route in routes:
        if route.path in PUBLIC_PATHS:
            assert declared_role(route) is None, route.path
            continue
        if is_preflight(route):  # a CORS preflight: headers only, whoever asks
            assert declared_role(route) is None, route.path
            answer = await client.options(_concrete(route.path))
            assert answer.status_code == 204 and answer.content == b"", route.path
            continue
        assert declared_role(route) is not None, f"{route.path} declares no role"
        for method in route.methods:
            for headers in ({}, {"Authorization": "Bearer nyla_abc_notavalidsecretatall"}):
                response = await client.request(method, _concrete(route.path), headers=headers)
                assert response.status_code == 401, (method, route.path, response.text)
                checked += 1
    assert checked > 50
    public = {r.path for r in routes} & PUBLIC_PATHS
    assert public == PUBLIC_PATHS  # the list names only routes that exist


async def test_public_routes_answer_without_identity(client):
    health = await client.get("/healthz")
    assert health.json() == {"status": "ok", "database": "ok"}
    page = await client.get("/")
    assert page.status_code == 200 and "nyla" in page.text
    assert (await client.get("/static/app.js")).status_code == 200
    assert (await client.get("/static/../app.py")).status_code == 404
    callback = await client.get("/api/connections/oauth/memfs/callback?state=forged&code=c")
    # public, and back to the page with what went wrong (the browser is mid sign-in)
    assert callback.status_code == 303 and "oauthError=" in callback.headers["location"]


async def test_tokens_are_stored_hashed_and_can_be_revoked(state, client):
    token, info = await state.tokens.create("bob", role="user", name="laptop")
    async with state.kernel.db.session() as s:
        row = (await s.execute(select(ApiTokenRow))).scalar_one()
    secret = token.split("_", 2)[2]
    assert secret not in row.secret_hash and token not in str(row.__dict__)
    headers = {"Authorization": f"Bearer {token}"}
    me = (await client.get("/api/me", headers=headers)).json()
    assert me["userId"] == "bob" and me["role"] == "user" and me["via"] == "token"
    tampered = {"Authorization": f"Bearer {token[:-2]}xx"}
    assert (await client.get("/api/me", headers=tampered)).status_code == 401
    assert await state.tokens.revoke(info.id)
    assert (await client.get("/api/me", headers=headers)).status_code == 401
    assert not await state.tokens.revoke(info.id)


async def test_verified_tokens_are_cached_for_a_bounded_time_only(state):
    db = state.kernel.db
    now = [1000.0]
    server = TokenStore(db, clock=lambda: now[0])
    elsewhere = TokenStore(db)  # `nyla tokens revoke`, another server process
    token, info = await state.tokens.create("dave", name="cached")
    identity = await server.verify(token)
    assert identity is not None and identity.user_id == "dave" and identity.via == "token"
    assert await elsewhere.revoke(info.id)
    # within the TTL the server answers from what it verified, the secret still checked
    assert await server.verify(token) == identity
    assert await server.verify(f"{token[:-2]}xx") is None
    now[0] += CACHE_TTL_S + 0.01
    assert await server.verify(token) is None  # the row is read again: revoked

    # a revocation through the serving store itself takes effect at once
    token, info = await state.tokens.create("erin")
    assert await server.verify(token) is not None
    assert await server.revoke(info.id)
    assert await server.verify(token) is None

    # an entry never outlives its token's expiry, however long the TTL
    patient = TokenStore(db, cache_ttl_s=3600, clock=lambda: now[0])
    token, info = await state.tokens.create("fay", expires_in_days=60 / 86400)
    assert await patient.verify(token) is not None
    assert await elsewhere.revoke(info.id)
    now[0] += 61
    assert await patient.verify(token) is None

    # without a cache every verification reads the row
    uncached = TokenStore(db, cache_ttl_s=0)
    token, info = await state.tokens.create("gus")
    assert await uncached.verify(token) is not None
    assert await elsewhere.revoke(info.id)
    assert await uncached.verify(token) is None


async def test_requests_in_flight_when_an_entry_ends_read_the_token_once(state, monkeypatch):
    db = state.kernel.db
    reads = 0
    real = db.read_driver

    async def counted(work):
        nonlocal reads
        reads += 1
        return await real(work)

    monkeypatch.setattr(db, "read_driver", counted)
    store = TokenStore(db)
    token, info = await state.tokens.create("ivy")
    wrong = f"{token[:-2]}xx"
    # the first of the herd holds a wrong secret: it gets nothing, records no use
    found = await asyncio.gather(store.verify(wrong), *(store.verify(token) for _ in range(20)))
    assert found[0] is None and all(f is not None and f.user_id == "ivy" for f in found[1:])
    assert reads == 1
    [row] = [t for t in await state.tokens.list() if t.id == info.id]
    assert row.last_used_at is None
    assert await store.verify(wrong) is None and reads == 1  # from the entry


async def test_a_busy_token_records_its_last_use_coarsely(state):
    token, info = await state.tokens.create("hal")
    assert info.last_used_at is None
    assert await state.tokens.verify(token) is not None
    [first] = [t for t in await state.tokens.list() if t.id == info.id]
    assert first.last_used_at is not None
    # a store that has not seen it (as after the TTL) reads the row, and does not write it
    assert await TokenStore(state.kernel.db).verify(token) is not None
    [second] = [t for t in await state.tokens.list() if t.id == info.id]
    assert second.last_used_at == first.last_used_at


async def test_expired_token_is_refused(state, client):
    token, _ = await state.tokens.create("carol", expires_in_days=-1)
    response = await client.get("/api/me", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401


async def test_roles_gate_the_inventories(client, token_for):
    user = await token_for("u", "user")
    admin = await token_for("a", "mandate-admin", "m1")
    sysadmin = await token_for("s", "sysadmin", None)
    assert (await client.get("/api/rag/inventory/me", headers=user)).status_code == 200
    assert (await client.get("/api/rag/inventory/mandate", headers=user)).status_code == 403
    mandate = await client.get("/api/rag/inventory/mandate", headers=admin)
    assert mandate.status_code == 200 and mandate.json()["subject"] == "m1"
    assert (await client.get("/api/rag/inventory/platform", headers=admin)).status_code == 403
    assert (await client.get("/api/rag/inventory/platform", headers=sysadmin)).status_code == 200


async def test_mandate_admin_token_needs_a_mandate(state):
    with pytest.raises(ValueError, match="mandate"):
        await state.tokens.create("x", role="mandate-admin", mandate_id=None)
    with pytest.raises(ValueError, match="unknown role"):
        await state.tokens.create("x", role="root")


def _jwks_and_signer():
    keys = {kid: rsa.generate_private_key(public_exponent=65537, key_size=2048) for kid in "ab"}
    published = {"a"}
    requests: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(str(request.url))
        if request.url.path == "/.well-known/openid-configuration":
            return httpx.Response(200, json={"jwks_uri": "https://idp.test/keys"})
        jwks = []
        for kid in sorted(published):
            jwk = jwt.algorithms.RSAAlgorithm.to_jwk(keys[kid].public_key(), as_dict=True)
            jwks.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
        return httpx.Response(200, json={"keys": jwks})

    def sign(kid: str, **claims) -> str:
        base = {"iss": "https://idp.test", "aud": "nyla", "sub": "dana", "exp": time.time() + 60}
        return jwt.encode({**base, **claims}, keys[kid], algorithm="RS256", headers={"kid": kid})

    return httpx.MockTransport(handler), sign, published, requests


async def test_oidc_bearer_jwts(kernel):
    transport, sign, published, requests = _jwks_and_signer()
    settings = OidcSettings(issuer="https://idp.test", audience="nyla", min_refresh_s=0)
    verifier = OidcVerifier(settings, transport=transport)
    good = await verifier.verify(sign("a", roles=["mandate-admin"], mandate="m7"))
    assert good is not None and good.user_id == "dana" and good.via == "oidc"
    assert good.role is Role.MANDATE_ADMIN and good.mandate_id == "m7"
    assert requests[0].endswith("/.well-known/openid-configuration")
    assert await verifier.verify(sign("a", aud="someone-else")) is None
    assert await verifier.verify(sign("a", exp=time.time() - 3600)) is None
    assert await verifier.verify(sign("a", iss="https://evil.test")) is None
    assert await verifier.verify(sign("b")) is None  # key b not published yet
    published.add("b")  # rotation: an unknown kid refetches the key set
    rotated = await verifier.verify(sign("b", roles="sysadmin"))
    assert rotated is not None and rotated.role is Role.SYSADMIN

    app = FastAPI()
    mount(app, build_state(kernel, oidc=verifier))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://h"
    ) as client:
        ok = await client.get("/api/me", headers={"Authorization": f"Bearer {sign('a')}"})
        assert ok.status_code == 200 and ok.json()["via"] == "oidc"
        forged = sign("a")[:-4] + "AAAA"
        bad = await client.get("/api/me", headers={"Authorization": f"Bearer {forged}"})
        assert bad.status_code == 401


async def test_host_app_auth_hook(kernel):
    async def hook(request):
        user = request.headers.get("x-sso-user")
        return Identity(user_id=user, role=Role.SYSADMIN, via="sso") if user else None

    app = FastAPI()
    mount(app, build_state(kernel, auth_hooks=[hook]))
    add_page(app)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://h"
    ) as client:
        me = await client.get("/api/me", headers={"X-SSO-User": "erin"})
        assert me.json()["userId"] == "erin" and me.json()["via"] == "sso"
        platform = await client.get("/api/rag/inventory/platform", headers={"X-SSO-User": "e"})
        assert platform.status_code == 200
        assert (await client.get("/api/me")).status_code == 401


def test_tokens_cli(db, monkeypatch):
    import json
    from urllib.parse import quote

    from click.testing import CliRunner

    from nyla_host.cli import tokens

    sep = "&" if "?" in db.url else "?"
    options = quote(f"-csearch_path={db.schema},public")
    monkeypatch.setenv("NYLA_DATABASE_URL", f"{db.url}{sep}options={options}")
    runner = CliRunner()
    created = runner.invoke(tokens, ["create", "--user", "zoe", "--role", "sysadmin", "--json"])
    assert created.exit_code == 0, created.output
    info = json.loads(created.output)
    assert info["token"].startswith("nyla_") and info["role"] == "sysadmin"
    listed = json.loads(runner.invoke(tokens, ["list", "--json"]).output)
    assert [t["id"] for t in listed] == [info["id"]] and "token" not in listed[0]
    table = runner.invoke(tokens, ["list"])
    assert info["id"] in table.output and info["token"] not in table.output
    assert runner.invoke(tokens, ["revoke", info["id"]]).exit_code == 0
    assert json.loads(runner.invoke(tokens, ["list", "--json"]).output) == []
    again = runner.invoke(tokens, ["revoke", info["id"]])
    assert again.exit_code == 1 and "no active token" in again.output
    bad = runner.invoke(tokens, ["create", "--user", "x", "--role", "mandate-admin"])
    assert bad.exit_code == 2 and "--mandate" in bad.output
