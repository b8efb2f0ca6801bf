"""Hostile input over the wire gets a 400 that says what was wrong — never a 500, a reset
connection or a driver's message — and a signed-in user cannot point the server at its own
files or network through a connection's settings."""

from __future__ import annotations

import json

import httpx
import pytest

pytestmark = pytest.mark.db

OWNED_ROUTES = [
    ("GET", "/api/runs/{}"),
    ("GET", "/api/files/{}"),
    ("GET", "/api/files/{}/content"),
    ("DELETE", "/api/files/{}"),
    ("GET", "/api/connections/{}/tree"),
    ("GET", "/api/connections/{}/browse"),
    ("PATCH", "/api/connections/{}/knowledge-consent"),
    ("GET", "/api/datasources/{}"),
    ("GET", "/api/datasources/{}/cost-estimate"),
    ("POST", "/api/runs/{}/cancel"),
    ("POST", "/api/runs/{}/resume"),
]


def _no_leak(response: httpx.Response) -> None:
    assert response.headers["content-type"].startswith("application/json"), response.text
    for word in ("psycopg", "SELECT", "sqlalchemy", "Traceback"):
        assert word not in response.text, response.text


@pytest.mark.parametrize("hostile", ["%00", "a%00b", "%ED%A0%80", "%FF"])
async def test_unstorable_ids_in_the_path_are_a_400(client, token_for, hostile):
    alice = await token_for("alice")
    for method, route in OWNED_ROUTES:
        body = {"enabled": False} if method == "PATCH" else None
        r = await client.request(method, route.format(hostile), json=body, headers=alice)
        assert r.status_code == 400, (method, route, r.status_code, r.text)
        assert "path" in r.json()["detail"]
        _no_leak(r)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ('{"prompt": "hi\\u0000"}', "NUL"),
        ('{"prompt": "\\ud800 lone"}', "surrogate"),
        ('{"prompt": "hi", "maxCostChf": NaN}', "NaN"),
        ('{"prompt": "hi", "maxCostChf": 1e999}', "out of range"),
        ('{"prompt": "hi", "toolboxes": ["\\u0000"]}', "NUL"),
        ('{"\\u0000": 1, "prompt": "hi"}', "NUL"),
        ("[" * 5000 + "]" * 5000, "nested"),
    ],
)
async def test_unstorable_json_bodies_are_a_400(client, token_for, body, says):
    alice = await token_for("alice")
    r = await client.post(
        "/api/runs", content=body, headers={**alice, "Content-Type": "application/json"}
    )
    assert r.status_code == 400, r.text
    assert says in r.json()["detail"]
    _no_leak(r)
    # nothing was started for the refused body
    assert (await client.get("/api/runs", headers=alice)).json()["runs"] == []


async def test_unstorable_settings_and_query_strings_are_a_400(client, token_for):
    alice = await token_for("alice")
    r = await client.post(
        "/api/connections",
        json={"service": "memfs", "settings": {"folder": "\x00"}},
        headers=alice,
    )
    assert r.status_code == 400 and "NUL" in r.json()["detail"], r.text
    assert (await client.get("/api/connections", headers=alice)).json()["connections"] == []
    r = await client.get("/api/knowledge/search?q=a%00b", headers=alice)
    assert r.status_code == 400 and "query string" in r.json()["detail"], r.text


async def test_well_formed_bodies_still_pass_and_malformed_ones_get_the_route_s_422(
    client, token_for
):
    alice = await token_for("alice")
    ok = await client.post(
        "/api/connections", json={"service": "memfs", "label": "Grüße 🙂"}, headers=alice
    )
    assert ok.status_code == 201, ok.text
    assert ok.json()["label"] == "Grüße 🙂"
    bad = await client.post(
        "/api/runs", content=b"{not json", headers={**alice, "Content-Type": "application/json"}
    )
    assert bad.status_code == 422, bad.text


async def test_a_query_with_no_words_is_the_caller_s_400(client, token_for):
    alice = await token_for("alice")
    r = await client.get("/api/knowledge/search", params={"q": "?!"}, headers=alice)
    assert r.status_code == 400, r.text
    assert "no words" in r.json()["detail"]


async def test_an_unexpected_failure_is_a_json_500_without_internals(app, token_for):
    @app.get("/api/test-boom")
    async def boom() -> None:
        raise RuntimeError("SELECT secret FROM internals")

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://host.test") as c:
        r = await c.get("/api/test-boom")
    assert r.status_code == 500
    assert r.json()["error"] == "InternalError"
    assert "secret" not in r.text and "SELECT" not in r.text


async def test_server_reaching_settings_need_a_sysadmin(state, client, token_for, monkeypatch):
    from nyla.sdk.connectors import ConnectorSettings, setting

    class Settings(ConnectorSettings):
        root: str | None = setting(None, kind="folder", label="Folder", server_only=True)
        note: str = setting("", kind="text", label="Note")

    connector = state.kernel.plugins.connectors["memfs"]
    monkeypatch.setattr(type(connector), "settings", Settings)
    alice = await token_for("alice")
    refused = await client.post(
        "/api/connections",
        json={"service": "memfs", "settings": {"root": "/etc"}},
        headers=alice,
    )
    assert refused.status_code == 403, refused.text
    assert "root" in refused.json()["detail"] and "sysadmin" in refused.json()["detail"]
    assert (await client.get("/api/connections", headers=alice)).json()["connections"] == []
    # other settings of the same service stay the user's to set
    fine = await client.post(
        "/api/connections", json={"service": "memfs", "settings": {"note": "x"}}, headers=alice
    )
    assert fine.status_code == 201, fine.text
    admin = await token_for("root-user", role="sysadmin", mandate=None)
    allowed = await client.post(
        "/api/connections",
        json={"service": "memfs", "settings": {"root": "/srv/shared"}},
        headers=admin,
    )
    assert allowed.status_code == 201, allowed.text
    assert json.loads(allowed.text)["settings"]["root"] == "/srv/shared"
