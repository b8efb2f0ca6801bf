"""Connected apps on the MCP servers tab, as a person meets them, in headless Chromium against
a served host. Alice has connected no app: the tab says how one connects (the /mcp address to
give it). She allows "Desk Agent" through the real OAuth flow (registered over HTTP, the
consent page in her browser, the code exchanged with its verifier) and, over HTTP, an app
whose self-chosen name is HTML with script in it. Both are listed (name, redirect host,
allowed, last used, expires); the hostile name is shown as text and runs nothing. Bob sees
neither. Alice revokes the hostile app behind the confirm dialog (Cancel first keeps it): its
access token then gets 401 on /mcp and its refresh token is refused, while Desk Agent still
works until she revokes it too. Screenshot: docs/screenshots/mcp-04-apps.png."""

from __future__ import annotations

import base64
import hashlib
import secrets
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from nyla_host.tokens import TokenStore

from .browsing import (  # noqa: F401
    MARKS,
    holds,
    page_fixture,
    served_fixture,
    shot,
    sign_in,
    watch,
)
from .served import free_port

pytestmark = MARKS

SCREENSHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"
MODEL_DELAY = 0.01
SERVED_ENV = {"NYLA_MCP_DIR": "{tmp}/mcp"}
HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=1</script>Evil & "Co"'
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
MCP_ACCEPT = "application/json, text/event-stream"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


class App:
    """An MCP client of nyla's endpoint: registers, asks, exchanges its code, calls /mcp."""

    def __init__(self, http: httpx.AsyncClient, url: str, name: str) -> None:
        self.http, self.url, self.name = http, url, name
        self.redirect = f"http://127.0.0.1:{free_port()}/callback"
        self.client_id = ""
        self.verifier, self.challenge = pkce()
        self.tokens: dict[str, str] = {}

    async def register(self) -> None:
        body = {"client_name": self.name, "redirect_uris": [self.redirect]}
        registered = await self.http.post("/oauth/register", json=body)
        assert registered.status_code == 201, registered.text
        self.client_id = registered.json()["client_id"]

    def authorization_url(self) -> str:
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect,
            "state": "s1",
            "code_challenge": self.challenge,
            "code_challenge_method": "S256",
            "resource": f"{self.url}/mcp",
        }
        return f"{self.url}/oauth/authorize?{urlencode(query)}"

    async def exchange(self, back: str) -> None:
        code = parse_qs(urlsplit(back).query)["code"][0]
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": self.redirect}
        form |= {"client_id": self.client_id, "code_verifier": self.verifier}
        issued = await self.http.post("/oauth/token", data=form)
        assert issued.status_code == 200, issued.text
        self.tokens = issued.json()

    async def mcp_status(self) -> int:
        headers = {"Authorization": f"Bearer {self.tokens['access_token']}", "Accept": MCP_ACCEPT}
        return (await self.http.post("/mcp", json=PING, headers=headers)).status_code

    async def refresh_status(self) -> int:
        form = {"grant_type": "refresh_token", "refresh_token": self.tokens["refresh_token"]}
        form["client_id"] = self.client_id
        return (await self.http.post("/oauth/token", data=form)).status_code


async def allow_over_http(app: App, person: str) -> str:
    """What the consent page's script does for the person: read the request, allow it."""
    start = await app.http.get(app.authorization_url())
    request_id = parse_qs(urlsplit(start.headers["location"]).query)["request"][0]
    signed_in = {"Authorization": f"Bearer {person}"}
    decided = await app.http.post(
        f"/api/oauth/requests/{request_id}", json={"approve": True}, headers=signed_in
    )
    assert decided.status_code == 200, decided.text
    return decided.json()["redirect"]


async def open_mcp_tab(page) -> None:
    await page.click(".tab[data-view=mcp]")
    await page.wait_for_selector("#view-mcp:not([hidden])")


async def allow_on_the_consent_page(page, app: App) -> None:
    """The person, signed in on the page, allows ``app`` on the consent page in her browser;
    the browser comes back to the app's loopback address, whose code the app exchanges."""
    returned: list[str] = []

    async def listener(route) -> None:
        returned.append(route.request.url)
        await route.fulfill(status=200, content_type="text/html", body="<p>back</p>")

    await page.route(f"{app.redirect}**", listener)
    await page.goto(app.authorization_url())
    await page.wait_for_selector("#consent-ask:not([hidden])")
    assert await page.text_content("#consent-client") == app.name
    await page.click("#consent-approve")
    await page.wait_for_url(lambda url: url.startswith(app.redirect))
    await app.exchange(returned[-1])


async def both_listed(page, desk: App) -> None:
    """Both apps listed, newest first; the hostile name is text and ran nothing; Desk Agent,
    used once, has its redirect host and a last use, the other none yet."""
    await page.wait_for_selector("#apps-table tbody tr:nth-child(2)")
    assert await page.is_hidden("#apps-empty")
    names = await page.eval_on_selector_all(
        "#apps-table .app-name", "ns => ns.map(n => n.textContent)"
    )
    assert names == [HOSTILE, "Desk Agent"]
    assert await page.query_selector("#apps-table img, #apps-table script") is None
    assert await page.evaluate("window.pwned === undefined")
    desk_id = desk.tokens["access_token"].split("_")[1]
    desk_row = await page.text_content(f"#apps-table tr[data-grant='{desk_id}']")
    assert urlsplit(desk.redirect).netloc in desk_row and "Not yet" not in desk_row
    evil_row = await page.text_content("#apps-table tbody tr:first-child")
    assert "Not yet" in evil_row and "Expired" not in evil_row


async def test_a_person_sees_and_revokes_the_apps_she_connected(served, page):
    server, alice = served
    db = server.database()
    try:
        bob, _ = await TokenStore(db).create("bob", role="user", mandate_id="m1", name="e2e")
    finally:
        await db.dispose()
    refused = watch(page)

    # nothing connected yet: the tab says what address to give an app
    await sign_in(page, server.url, alice)
    await open_mcp_tab(page)
    await page.wait_for_selector("#apps-empty:not([hidden])")
    assert f"{server.url}/mcp" in await page.text_content("#apps-empty code")
    assert await page.is_hidden("#apps-table")

    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        desk, evil = App(http, server.url, "Desk Agent"), App(http, server.url, HOSTILE)
        await desk.register()
        await evil.register()
        await allow_on_the_consent_page(page, desk)
        assert await desk.mcp_status() == 200  # used once: "last used" has a time
        # the hostile one as the consent page's script would allow it
        await evil.exchange(await allow_over_http(evil, alice))

        await page.goto(f"{server.url}/#mcp")
        await both_listed(page, desk)

        # Bob sees none of Alice's apps
        await sign_in(page, server.url, bob)
        await open_mcp_tab(page)
        await page.wait_for_selector("#apps-empty:not([hidden])")
        assert await page.query_selector("#apps-table tbody tr") is None

        # Alice revokes the hostile app: Cancel keeps it, Revoke cuts it off at once
        await sign_in(page, server.url, alice)
        await open_mcp_tab(page)
        await page.wait_for_selector("#apps-table tbody tr:nth-child(2)")
        evil_revoke = "#apps-table tbody tr:first-child button[data-action=revoke]"
        await page.click(evil_revoke)
        assert HOSTILE in await page.text_content("#confirm-text")
        await page.click("#confirm-cancel")
        assert len(await page.query_selector_all("#apps-table tbody tr")) == 2
        assert await evil.mcp_status() == 200
        await page.click(evil_revoke)
        await page.click("#confirm-ok")
        await holds(page, "document.querySelectorAll('#apps-table tbody tr').length === 1")
        assert await page.text_content("#apps-done") == f"{HOSTILE} revoked."
        assert await evil.mcp_status() == 401
        assert await evil.refresh_status() == 400
        assert await desk.mcp_status() == 200
        await shot(page, "mcp-04-apps", SCREENSHOTS)

        # and Desk Agent too: the list is empty again, with the address to connect one
        await page.click("#apps-table button[data-action=revoke]")
        await page.click("#confirm-ok")
        await page.wait_for_selector("#apps-empty:not([hidden])")
        assert await desk.mcp_status() == 401
    assert refused == []
