"""MCP servers in the host's settings, in headless Chromium against a served host: Bob adds
his own MCP server (the demo server, a real stdio process) on the MCP servers page, sees its
tools counted, and removes it; Carol, admin of his organisation, adds one for everyone, which
Bob then sees without a way to remove it. Screenshots: docs/screenshots/mcp-NN-*.png."""

from __future__ import annotations

import sys
from pathlib import Path

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

pytestmark = MARKS

SCREENSHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"
MODEL_DELAY = 0.01
SERVED_ENV = {"NYLA_MCP_DIR": "{tmp}/mcp"}
DEMO = Path(__file__).parents[3] / "plugins/toolboxes/mcp/tests/demo_server.py"


async def _add(page, name: str, scope: str | None = None) -> None:
    await page.fill("#mcp-name", name)
    await page.fill("#mcp-where", f"{sys.executable} {DEMO}")
    if scope is not None:
        await page.select_option("#mcp-scope", scope)
    await page.click("#mcp-add")
    await page.wait_for_selector(f"tr[data-name={name}]", timeout=120_000)


async def test_a_user_and_an_organisation_admin_set_up_mcp_servers(served, page):
    server, _ = served
    db = server.database()
    try:
        bob, _ = await TokenStore(db).create("bob", role="user", mandate_id="m1", name="e2e")
        carol, _ = await TokenStore(db).create(
            "carol", role="mandateAdmin", mandate_id="m1", name="e2e"
        )
    finally:
        await db.dispose()
    refused = watch(page)

    # Bob adds a server of his own: it is started once and its tools are counted
    await sign_in(page, server.url, bob)
    await page.click(".tab[data-view=mcp]")
    await page.wait_for_selector("#view-mcp:not([hidden])")
    await holds(page, "document.querySelector('#mcp-org tbody').textContent.includes('No servers')")
    scopes = await page.eval_on_selector_all("#mcp-scope option", "os => os.map(o => o.value)")
    assert scopes == ["user"]  # not an admin: only his own
    await _add(page, "notes")
    row = await page.text_content("#mcp-mine tr[data-name=notes]")
    assert "6 tools" in row and str(DEMO) in row
    assert "mcp:notes" in await page.text_content("#mcp-done")
    await shot(page, "mcp-01-added", SCREENSHOTS)
    await page.click("#mcp-mine tr[data-name=notes] button")
    await holds(page, "!document.querySelector('#mcp-mine tr[data-name=notes]')")
    assert "notes removed" in await page.text_content("#mcp-done")

    # Carol, the organisation's admin, adds one for everyone
    await sign_in(page, server.url, carol)
    await page.click(".tab[data-view=mcp]")
    await page.wait_for_selector("#view-mcp:not([hidden])")
    await holds(page, "document.querySelectorAll('#mcp-scope option').length === 2")
    await _add(page, "crm", "mandate")
    assert "6 tools" in await page.text_content("#mcp-org tr[data-name=crm]")

    # Bob sees it, and has no way to remove it
    await sign_in(page, server.url, bob)
    await page.click(".tab[data-view=mcp]")
    await page.wait_for_selector("#mcp-org tr[data-name=crm]")
    assert await page.query_selector("#mcp-org tr[data-name=crm] button") is None
    await shot(page, "mcp-02-organisation", SCREENSHOTS)
    assert refused == []
