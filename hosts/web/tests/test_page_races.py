"""Requests that overlap on the page, in headless Chromium against a served host: a list's
first load held back (Playwright answers it late, with what the list said before) while a
later load of the same list answers must never put the older answer back, on any tab; and a
form sent twice before its first answer sends one request. The page's one mechanism for both
is ``startLoad`` and ``oneAtATime`` in api.js."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

from .browsing import (  # noqa: F401
    MARKS,
    holds,
    page_fixture,
    served_fixture,
    sign_in,
    watch,
)

pytestmark = MARKS
MODEL_DELAY = 0.01


@dataclass
class Late:
    """The first request of ``method`` to ``glob`` is held until ``release`` is set, then
    answered with ``stale`` (no server sees it); every later one goes to the server, or is
    answered with ``fresh`` when that is given."""

    glob: str
    stale: object
    method: str = "GET"
    fresh: object = None
    seen: list[str] = field(default_factory=list)
    held: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    answered: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, route) -> None:
        if route.request.method != self.method:
            await route.continue_()
            return
        self.seen.append(route.request.url)
        if len(self.seen) > 1:
            if self.fresh is None:
                await route.continue_()
            else:
                body = json.dumps(self.fresh)
                await route.fulfill(status=200, content_type="application/json", body=body)
            return
        self.held.set()
        await self.release.wait()
        await route.fulfill(
            status=200, content_type="application/json", body=json.dumps(self.stale)
        )
        self.answered.set()

    async def let_go(self, page) -> None:
        """Answer the held request, then let the page's script run on that answer."""
        self.release.set()
        await asyncio.wait_for(self.answered.wait(), 20)
        # the answer's body read and (wrongly) painted takes the page a few milliseconds
        await page.evaluate("new Promise((resolve) => setTimeout(resolve, 300))")


async def _go(page, view: str) -> None:
    await page.evaluate(f"location.hash = '#{view}'")


async def _reopen(page, view: str) -> None:
    """Leave the view and come back: the view loads its lists again."""
    await _go(page, "chat")
    await page.wait_for_selector("#view-chat:not([hidden])")
    await _go(page, view)


async def _late_first(page, late: Late, open_first, open_again, newer: str, stale: str) -> str:
    """Run one race; returns what went wrong ('' when the newer answer held)."""
    await page.route(late.glob, late.handle)
    try:
        await open_first()
        await asyncio.wait_for(late.held.wait(), 20)
        await open_again()
        await holds(page, newer)
        await late.let_go(page)
        if await page.evaluate(stale):
            return f"{late.glob}: the held first answer was painted over the newer one"
        if not await page.evaluate(newer):
            return f"{late.glob}: the newer answer is gone"
        return ""
    finally:
        await page.unroute(late.glob, late.handle)


async def _conversations_race(page, url: str, token: str) -> str:
    """The chat (the first view) lists the conversations at sign-in; the list is asked again
    while that first answer is held. The empty list is painted before any answer comes, so
    the newer answer names one."""
    conversations = Late(
        "**/api/conversations",
        {"conversations": [{"id": "stale", "title": "Stale list", "createdAt": None}]},
        fresh={"conversations": [{"id": "fresh", "title": "Fresh list", "createdAt": None}]},
    )
    await page.route(conversations.glob, conversations.handle)
    try:
        await sign_in(page, url, token)
        await asyncio.wait_for(conversations.held.wait(), 20)
        await page.click("#new-conversation")  # lists them again
        await page.wait_for_selector("#conversations li[data-id=fresh]")
        await conversations.let_go(page)
        if await page.evaluate(
            "Boolean(document.querySelector('#conversations li[data-id=stale]'))"
        ):
            return "conversations: the held first list was painted over the newer one"
        return ""
    finally:
        await page.unroute(conversations.glob, conversations.handle)


async def test_an_older_answer_never_paints_over_a_newer_one(served, page):
    server, token = served
    refused = watch(page)
    failures = [await _conversations_race(page, server.url, token)]

    files = Late("**/api/files", {"files": [{"id": "stale", "name": "stale.txt", "size": 1}]})
    failures.append(
        await _late_first(
            page,
            files,
            lambda: _go(page, "files"),
            lambda: _reopen(page, "files"),
            "document.querySelector('#files-table tbody').textContent.includes('No files yet')",
            "Boolean(document.querySelector('#files-table tr[data-id=stale]'))",
        )
    )

    totals = {"files": 999, "failedFiles": 0, "chunks": 0, "bytes": 0, "lastIndexed": None}
    inventory = Late("**/api/rag/inventory/me", {"rows": [], "totals": totals, "partial": []})
    failures.append(
        await _late_first(
            page,
            inventory,
            lambda: _go(page, "inventory"),
            lambda: page.click("#levels button:has-text('Platform')"),
            "document.querySelector('#inventory-table .total-files')?.textContent === '0'",
            "document.querySelector('#inventory-table .total-files')?.textContent === '999'",
        )
    )

    stale_server = {"name": "stale", "transport": "stdio", "command": "x", "args": []}
    mcp = Late("**/api/settings/sections/mcp/user", [{**stale_server, "tools": []}])
    grant = {"id": "stale", "clientName": "Stale app", "clientId": "c", "redirectHosts": []}
    apps = Late("**/api/oauth/grants", [grant])
    await page.route(apps.glob, apps.handle)
    failures.append(
        await _late_first(
            page,
            mcp,
            lambda: _go(page, "mcp"),
            lambda: _reopen(page, "mcp"),
            "document.querySelector('#mcp-mine tbody').textContent.includes('No servers')"
            " && !document.querySelector('#apps-empty').hidden",
            "Boolean(document.querySelector('#mcp-mine tr[data-name=stale]'))",
        )
    )
    await apps.let_go(page)
    if await page.evaluate("Boolean(document.querySelector('#apps-table tr[data-grant=stale]'))"):
        failures.append("apps: the held first list was painted over the newer one")
    await page.unroute(apps.glob, apps.handle)

    access = Late(
        "**/api/access/me", {"permissions": [{"permission": "service.stale", "allowed": True}]}
    )
    failures.append(
        await _late_first(
            page,
            access,
            lambda: _go(page, "access"),
            lambda: _reopen(page, "access"),
            "document.querySelectorAll('#access-mine li').length > 0",
            "Boolean(document.querySelector('#access-mine li[data-permission=\"service.stale\"]'))",
        )
    )
    wrong = [f for f in failures if f]
    assert not wrong, "\n".join(wrong)
    assert refused == []


async def test_a_form_sent_twice_before_its_answer_sends_once(served, page):
    server, token = served
    await sign_in(page, server.url, token)
    await _go(page, "access")
    await page.wait_for_selector("#access-admin:not([hidden])")
    await holds(page, "document.querySelectorAll('#access-permission option').length > 0")
    await page.fill("#access-subject", "bob")
    put = Late(
        "**/api/access/rules",
        {"kind": "user", "subject": "bob", "permission": "service.agent", "allowed": True},
        method="PUT",
    )
    await page.route(put.glob, put.handle)
    # two clicks on Grant (a double click, or Enter twice) while the first is under way
    await page.evaluate(
        "() => { const form = document.querySelector('#access-form');"
        " const grant = document.querySelector('#access-grant');"
        " form.requestSubmit(grant); form.requestSubmit(grant); }"
    )
    await asyncio.wait_for(put.held.wait(), 20)
    await page.evaluate("new Promise((resolve) => setTimeout(resolve, 300))")
    await put.let_go(page)
    assert len(put.seen) == 1
    await holds(page, "document.querySelector('#access-done').textContent.includes('may')")
