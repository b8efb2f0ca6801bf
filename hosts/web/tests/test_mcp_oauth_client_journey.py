"""Signing in to an OAuth MCP server from the page, in headless Chromium against a served host:
Bob adds a server that signs in with OAuth (the OAuth test server, a real process that is its
own authorization server and approves at once), clicks Sign in, his browser goes to the
authorization server and comes back to the page signed in, with the server's tool listed;
then he signs out. Screenshot: docs/screenshots/mcp-03-signed-in.png."""

from __future__ import annotations

from pathlib import Path

from nyla_host.tokens import TokenStore

from .browsing import MARKS, holds, page_fixture, served_fixture, shot, watch  # noqa: F401
from .test_mcp_client_oauth import oauth_base_fixture  # noqa: F401  (the OAuth test server)

pytestmark = MARKS

SCREENSHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"
MODEL_DELAY = 0.01
SERVED_ENV = {"NYLA_MCP_DIR": "{tmp}/mcp"}


async def test_a_user_signs_in_to_an_oauth_mcp_server_from_the_page(served, page, oauth_base):
    server, _ = served
    db = server.database()
    try:
        bob, _ = await TokenStore(db).create("bob", role="user", mandate_id="m1", name="e2e")
    finally:
        await db.dispose()
    refused = watch(page)
    await page.goto(f"{server.url}/")
    await page.wait_for_selector("#view-signin:not([hidden])")
    await page.fill("#token", bob)
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#view-chat:not([hidden])")
    await page.click(".tab[data-view=mcp]")
    await page.wait_for_selector("#view-mcp:not([hidden])")

    # Bob adds the server: it signs in with OAuth, so its tools wait for his sign-in
    await page.fill("#mcp-name", "secure")
    await page.fill("#mcp-where", f"{oauth_base}/mcp")
    await page.check("#mcp-oauth")
    await page.click("#mcp-add")
    row = "#mcp-mine tr[data-name=secure]"
    await page.wait_for_selector(f"{row} button[data-action=sign-in]", timeout=60_000)
    assert "0 tools" in await page.text_content(row)
    assert "sign in to it" in await page.text_content("#mcp-done")

    # Sign in: off to the authorization server, and back to the page signed in
    await page.click(f"{row} button[data-action=sign-in]")
    await page.wait_for_url(f"{server.url}/#mcp", timeout=60_000)
    await page.wait_for_selector(f"{row} button[data-action=sign-out]", timeout=60_000)
    assert "1 tools" in await page.text_content(row)
    assert "Signed in" in await page.text_content(row)
    assert "Signed in to secure." in await page.text_content("#mcp-done")
    await shot(page, "mcp-03-signed-in", SCREENSHOTS)

    # Sign out: the tokens are revoked, Sign in is offered again
    await page.click(f"{row} button[data-action=sign-out]")
    await page.wait_for_selector(f"{row} button[data-action=sign-in]")
    assert "tokens revoked" in await page.text_content("#mcp-done")
    await holds(page, "location.hash === '#mcp'")
    assert refused == []
