"""The OAuth consent page as a person meets it, in headless Chromium against a served host: an
MCP client (registered over HTTP, its loopback listener played by the test) sends Dana's
browser to nyla's authorization endpoint. She is not signed in, so the consent page asks for
her token first; then it names the client, where the answer goes and what the client gets.
She allows it: the browser lands on the client's redirect URI with a code and the client's
state, and the code buys an access token that opens /mcp. Asked again, she denies: the
client gets ``access_denied`` with its state. Screenshot: docs/screenshots/oauth-01-consent.png."""

from __future__ import annotations

import base64
import hashlib
import secrets
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from nyla_host.tokens import TokenStore

from .browsing import MARKS, page_fixture, served_fixture, shot, watch  # noqa: F401
from .mcp_wire import INITIALIZE
from .served import free_port

pytestmark = MARKS

SCREENSHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


async def test_a_person_allows_then_denies_an_mcp_client(served, page):
    server, _ = served
    db = server.database()
    try:
        dana, _ = await TokenStore(db).create("dana", role="user", mandate_id="m1", name="e2e")
    finally:
        await db.dispose()
    redirect = f"http://127.0.0.1:{free_port()}/callback"
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        registered = await http.post(
            "/oauth/register", json={"client_name": "Desk Agent", "redirect_uris": [redirect]}
        )
        client_id = registered.json()["client_id"]
    # the client's loopback listener: the test sees where the browser is sent back to
    returned: list[str] = []

    async def listener(route) -> None:
        returned.append(route.request.url)
        await route.fulfill(status=200, content_type="text/html", body="<p>back in the app</p>")

    await page.route(f"{redirect}**", listener)
    refused = watch(page)

    def authorization_url(challenge: str, state: str) -> str:
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": f"{server.url}/mcp",
        }
        return f"{server.url}/oauth/authorize?{urlencode(query)}"

    # not signed in: the consent page asks who she is first
    verifier, challenge = pkce()
    await page.goto(authorization_url(challenge, "first-state"))
    await page.wait_for_selector("#consent-signin:not([hidden])")
    assert await page.is_hidden("#consent-ask")
    await page.fill("#consent-token", dana)
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#consent-ask:not([hidden])")
    assert await page.text_content("#consent-client") == "Desk Agent"
    assert await page.text_content("#consent-host") == urlsplit(redirect).netloc
    assert await page.text_content("#consent-user") == "dana"
    assert "search your knowledge store" in await page.text_content("#consent-grants")
    await shot(page, "oauth-01-consent", SCREENSHOTS)
    await page.click("#consent-approve")
    await page.wait_for_url(lambda url: url.startswith(redirect))
    back = parse_qs(urlsplit(returned[-1]).query)
    assert back["state"] == ["first-state"] and back["iss"] == [server.url]

    # the client's side: the code, with its verifier, is an access token for /mcp
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        form = {
            "grant_type": "authorization_code",
            "code": back["code"][0],
            "redirect_uri": redirect,
            "client_id": client_id,
            "code_verifier": verifier,
        }
        issued = await http.post("/oauth/token", data=form)
        assert issued.status_code == 200, issued.text
        headers = {
            "Authorization": f"Bearer {issued.json()['access_token']}",
            "Accept": "application/json, text/event-stream",
        }
        assert (await http.post("/mcp", json=INITIALIZE, headers=headers)).status_code == 200

    # asked again, already signed in: she denies, and the client hears so with its state
    _, challenge = pkce()
    await page.goto(authorization_url(challenge, "second-state"))
    await page.wait_for_selector("#consent-ask:not([hidden])")
    await page.click("#consent-deny")
    await page.wait_for_url(lambda url: url.startswith(redirect))
    back = parse_qs(urlsplit(returned[-1]).query)
    assert back["error"] == ["access_denied"] and back["state"] == ["second-state"]
    assert "code" not in back
    assert refused == []
