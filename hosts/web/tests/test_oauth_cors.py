"""CORS on the authorization server's public endpoints, for MCP clients that run in a
browser: any origin, no credentials, preflights answered; never on the consent page or the
API its script calls as the signed-in person."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.db

ORIGIN = {"Origin": "https://mcp-client.example"}
REDIRECT = "http://127.0.0.1:40111/cb"
CORS_PATHS = [
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-authorization-server",
    "/oauth/register",
    "/oauth/token",
    "/oauth/revoke",
]


@pytest.mark.parametrize("path", CORS_PATHS)
async def test_a_preflight_is_answered_for_any_origin_without_credentials(client, path):
    answer = await client.options(
        path,
        headers={
            **ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, mcp-protocol-version",
        },
    )
    assert answer.status_code == 204, answer.text
    assert answer.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in answer.headers
    allowed = {h.strip().lower() for h in answer.headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type", "mcp-protocol-version"} <= allowed
    assert "POST" in answer.headers["access-control-allow-methods"]


async def test_the_answers_carry_cors_errors_too(client):
    for path in CORS_PATHS[:3]:
        metadata = await client.get(path, headers=ORIGIN)
        assert metadata.status_code == 200
        assert metadata.headers["access-control-allow-origin"] == "*", path
        assert "access-control-allow-credentials" not in metadata.headers
    registered = await client.post(
        "/oauth/register", json={"client_name": "web", "redirect_uris": [REDIRECT]}, headers=ORIGIN
    )
    assert registered.status_code == 201, registered.text
    assert registered.headers["access-control-allow-origin"] == "*"
    client_id = registered.json()["client_id"]
    # an OAuth error must be readable by the page too (it says what went wrong)
    bad_code = await client.post(
        "/oauth/token",
        data={"grant_type": "authorization_code", "client_id": client_id, "code": "nope"},
        headers=ORIGIN,
    )
    assert bad_code.status_code == 400 and bad_code.json()["error"]
    assert bad_code.headers["access-control-allow-origin"] == "*"
    revoked = await client.post(
        "/oauth/revoke", data={"token": "unknown", "client_id": client_id}, headers=ORIGIN
    )
    assert revoked.status_code == 200
    assert revoked.headers["access-control-allow-origin"] == "*"


async def test_the_consent_page_and_its_api_get_no_cors(client, token_for):
    alice = await token_for("alice")
    for path in ("/oauth/consent", "/api/oauth/requests/x", "/oauth/authorize"):
        preflight = await client.options(
            path, headers={**ORIGIN, "Access-Control-Request-Method": "POST"}
        )
        assert "access-control-allow-origin" not in preflight.headers, path
        assert preflight.status_code in (401, 405), (path, preflight.status_code)
    page = await client.get("/oauth/consent", headers=ORIGIN)
    assert page.status_code == 200 and "access-control-allow-origin" not in page.headers
    request = await client.get("/api/oauth/requests/x", headers={**ORIGIN, **alice})
    assert request.status_code == 404 and "access-control-allow-origin" not in request.headers
    decision = await client.post(
        "/api/oauth/requests/x", json={"approve": True}, headers={**ORIGIN, **alice}
    )
    assert decision.status_code == 404 and "access-control-allow-origin" not in decision.headers
    grants = await client.get("/api/oauth/grants", headers={**ORIGIN, **alice})
    assert grants.status_code == 200 and "access-control-allow-origin" not in grants.headers
