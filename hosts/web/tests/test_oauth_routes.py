"""Hostile input on the OAuth routes with the ids the schema fuzz cannot guess: a registered
client, a pending authorization request and an approved code. Generated text (NUL bytes,
control characters, long values, any Unicode a client can encode) in every field of the
authorization, token, revocation and registration requests and of the consent decision: no
5xx, every error JSON in its shape, and nothing granted by it — the real code still works
afterwards, once. And a person's own grants: listed, revoked by them alone."""

from __future__ import annotations

import base64
import hashlib
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.db

REDIRECT = "http://127.0.0.1:40111/cb"
TEXT = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=40),
    st.sampled_from(["\x00", "a\x00b", "%00", "x" * 9000, "S256", "plain", "code", "mcp", ""]),
)


def drawn(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """``count`` examples, the same on every run (as the schema fuzz draws them)."""
    cases: list[Any] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(case: Any) -> None:
        cases.append(case)

    collect()
    return cases[:count]


def fields(*names: str, real: dict[str, str]) -> st.SearchStrategy[dict[str, str]]:
    """Forms of the named fields: generated text, or the real value, or left out."""
    return st.fixed_dictionaries(
        {},
        optional={n: st.one_of(TEXT, st.just(real.get(n, ""))) for n in names},
    )


def fine(response: Any) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        body = response.json()
        assert body.get("error") or body.get("detail"), response.text


async def test_generated_oauth_requests_get_no_5xx_and_grant_nothing(client, token_for):
    alice = await token_for("alice")
    registered = await client.post(
        "/oauth/register", json={"client_name": "fuzz", "redirect_uris": [REDIRECT]}
    )
    client_id = registered.json()["client_id"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge.decode().rstrip("="),
        "code_challenge_method": "S256",
        "state": "st",
        "resource": "http://host.test/mcp",
    }
    start = await client.get("/oauth/authorize", params=query)
    request_id = parse_qs(urlsplit(start.headers["location"]).query)["request"][0]
    real = {**query, "grant_type": "authorization_code", "code_verifier": verifier}

    for params in drawn(fields(*query, real=query), 80):
        fine(await client.get("/oauth/authorize", params=params))
    path = f"/api/oauth/requests/{request_id}"
    for answer in ("true", "yes", 1, None, [True]):  # only a JSON boolean decides
        refused = await client.post(path, json={"approve": answer}, headers=alice)
        assert refused.status_code == 422, refused.text
    for body in drawn(st.one_of(st.dictionaries(TEXT, TEXT, max_size=3), TEXT), 30):
        fine(await client.post(path, json={"approve": body}, headers=alice))
        fine(await client.post(path, json=body, headers=alice))
    decided = await client.post(
        f"/api/oauth/requests/{request_id}", json={"approve": True}, headers=alice
    )
    code = parse_qs(urlsplit(decided.json()["redirect"]).query)["code"][0]
    real["code"] = code
    names = ("grant_type", "code", "redirect_uri", "client_id", "code_verifier", "resource")
    for form in drawn(fields(*names, "refresh_token", "scope", real=real), 120):
        if form.get("code") == code and form.get("code_verifier") == verifier:
            form["code_verifier"] = "wrong"  # the real pair is kept for the end
        fine(await client.post("/oauth/token", data=form))
    for form in drawn(fields("token", "token_type_hint", "client_id", real=real), 40):
        fine(await client.post("/oauth/revoke", data=form))
    metadata = st.fixed_dictionaries(
        {"redirect_uris": st.one_of(st.lists(TEXT, max_size=3), TEXT)},
        optional={"client_name": TEXT, "grant_types": st.lists(TEXT, max_size=2), "scope": TEXT},
    )
    for body in drawn(metadata, 15):
        fine(await client.post("/oauth/register", json=body))

    # nothing above used the code: it buys one token, once
    form = {k: real[k] for k in names}
    issued = await client.post("/oauth/token", data=form)
    assert issued.status_code == 200, issued.text
    assert (await client.post("/oauth/token", data=form)).status_code == 400


async def _grant(client, person: dict[str, str]) -> dict[str, Any]:
    """A client registered, allowed by ``person`` and its code exchanged: the token answer."""
    registered = await client.post(
        "/oauth/register", json={"client_name": "desk", "redirect_uris": [REDIRECT]}
    )
    client_id = registered.json()["client_id"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge.decode().rstrip("="),
    }
    start = await client.get("/oauth/authorize", params=query)
    request_id = parse_qs(urlsplit(start.headers["location"]).query)["request"][0]
    path = f"/api/oauth/requests/{request_id}"
    decided = await client.post(path, json={"approve": True}, headers=person)
    code = parse_qs(urlsplit(decided.json()["redirect"]).query)["code"][0]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
    form |= {"client_id": client_id, "code_verifier": verifier}
    issued = await client.post("/oauth/token", data=form)
    assert issued.status_code == 200, issued.text
    return issued.json()


async def test_a_person_lists_and_revokes_their_own_grants(client, token_for):
    alice, bob = await token_for("alice"), await token_for("bob")
    grant = await _grant(client, alice)
    mcp = {
        "Authorization": f"Bearer {grant['access_token']}",
        "Accept": "application/json, text/event-stream",
    }
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert (await client.post("/mcp", json=ping, headers=mcp)).status_code == 200
    listed = (await client.get("/api/oauth/grants", headers=alice)).json()
    grant_id = grant["access_token"].split("_")[1]
    assert [(g["id"], g["clientName"]) for g in listed] == [(grant_id, "desk")]
    assert listed[0]["redirectHosts"] == ["127.0.0.1:40111"]
    ends = datetime.fromisoformat(listed[0]["expiresAt"]) - datetime.now(UTC)
    assert timedelta(days=29) < ends <= timedelta(days=30)  # the refresh token's life
    assert (await client.get("/api/oauth/grants", headers=bob)).json() == []
    # the access token itself cannot list or revoke (it is good for /mcp only)
    assert (await client.get("/api/oauth/grants", headers=mcp)).status_code == 401
    assert (await client.delete(f"/api/oauth/grants/{grant_id}", headers=bob)).status_code == 404
    assert (await client.post("/mcp", json=ping, headers=mcp)).status_code == 200
    assert (await client.delete(f"/api/oauth/grants/{grant_id}", headers=alice)).status_code == 204
    assert (await client.post("/mcp", json=ping, headers=mcp)).status_code == 401
    assert (await client.get("/api/oauth/grants", headers=alice)).json() == []
    refresh = {"grant_type": "refresh_token", "refresh_token": grant["refresh_token"]}
    refused = await client.post(
        "/oauth/token", data={**refresh, "client_id": listed[0]["clientId"]}
    )
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"


async def test_a_code_is_refused_for_another_redirect_uri_and_once_expired(
    state, client, token_for
):
    from sqlalchemy import update

    from nyla_host.oauth.store import digest
    from nyla_host.oauth.tables import OAuthCodeRow

    alice = await token_for("alice")
    registered = await client.post(
        "/oauth/register", json={"client_name": "desk", "redirect_uris": [REDIRECT, f"{REDIRECT}2"]}
    )
    client_id = registered.json()["client_id"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge.decode().rstrip("="),
    }
    start = await client.get("/oauth/authorize", params=query)
    request_id = parse_qs(urlsplit(start.headers["location"]).query)["request"][0]
    decided = await client.post(
        f"/api/oauth/requests/{request_id}", json={"approve": True}, headers=alice
    )
    code = parse_qs(urlsplit(decided.json()["redirect"]).query)["code"][0]
    form = {"grant_type": "authorization_code", "code": code, "client_id": client_id}
    form["code_verifier"] = verifier
    # the client's other registered redirect URI is not the one the code was sent to
    other = await client.post("/oauth/token", data={**form, "redirect_uri": f"{REDIRECT}2"})
    assert other.status_code == 400 and other.json()["error"] == "invalid_request", other.text
    async with state.kernel.db.session() as s:
        await s.execute(
            update(OAuthCodeRow)
            .where(OAuthCodeRow.code_hash == digest(code))
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    expired = await client.post("/oauth/token", data={**form, "redirect_uri": REDIRECT})
    assert expired.status_code == 400 and expired.json()["error"] == "invalid_grant", expired.text
