"""What the browser tests share: Debian's Chromium driven by Playwright against ``nyla
serve`` on 127.0.0.1 (a served host per test), and the page helpers (poll an expression,
take a screenshot). A test module imports the fixtures ``page_fixture`` and
``served_fixture`` (used as ``page`` and ``served``)."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
import pytest_asyncio

from .served import Served

CHROMIUM = next(
    (
        p
        for p in (os.environ.get("NYLA_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"))
        if p and Path(p).exists()
    ),
    None,
)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

MARKS = [
    pytest.mark.db,
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium found (install Debian's: apt-get install -y chromium; or set NYLA_CHROMIUM)",
    ),
]


@pytest_asyncio.fixture(name="served")
async def served_fixture(embedded_pg, tmp_path, request, monkeypatch):
    """A served host and a sysadmin's token; the demo model streams its words
    ``MODEL_DELAY`` seconds apart and the server's environment has ``SERVED_ENV`` (constants
    of the test module; 0.15 s and nothing by default). A value's ``{tmp}`` is the test's
    own temporary directory, removed with it (a module-level ``mkdtemp`` never was)."""
    for key, value in getattr(request.module, "SERVED_ENV", {}).items():
        monkeypatch.setenv(key, value.replace("{tmp}", str(tmp_path)))
    server = Served(embedded_pg, tmp_path)
    token = await server.prepare()
    server.start(delay_s=getattr(request.module, "MODEL_DELAY", 0.15))
    try:
        yield server, token
    finally:
        server.stop()
        await server.drop()


@pytest_asyncio.fixture(name="page")
async def page_fixture():
    playwright_api = pytest.importorskip("playwright.async_api", reason="playwright not installed")
    async with playwright_api.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        context = await browser.new_context(
            viewport={"width": 1180, "height": 760},
            timezone_id="Europe/Zurich",
            accept_downloads=True,
        )
        page = await context.new_page()
        page.set_default_timeout(20_000)
        try:
            yield page
        finally:
            await browser.close()


async def holds(page, expression: str, attempts: int = 400, pause: float = 0.05) -> None:
    """Poll ``expression`` in the page until it is truthy. (Playwright's wait_for_function
    evaluates its predicate with ``eval``, which the page's Content-Security-Policy refuses;
    ``evaluate`` goes through the DevTools protocol, which the policy does not govern.)"""
    for _ in range(attempts):
        if await page.evaluate(expression):
            return
        await asyncio.sleep(pause)
    raise AssertionError(f"the page never met: {expression}")


async def shot(page, name: str, default: Path | None = None) -> None:
    """A screenshot ``name``.png into ``NYLA_SCREENSHOTS`` (else ``default``, else none)."""
    target = os.environ.get("NYLA_SCREENSHOTS") or default
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(Path(target) / f"{name}.png"))


def watch(page) -> list[str]:
    """What the page's Content-Security-Policy refused and any error of its script."""
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Security Policy" in m.text else 0)
    page.on("pageerror", lambda e: refused.append(str(e)))
    return refused


async def sign_in(page, url: str, token: str) -> None:
    """Sign in as the token's person; whoever is signed in signs out first with the page's
    own button, which reloads the page (waited for, so its script is wired before the token
    is typed). Clearing the storage under a live page instead races its polling: a 401
    there signs out and reloads, aborting a navigation of the test."""
    if await page.is_visible("#signout"):
        # the reload's load event (its history.replaceState is a navigation too)
        async with page.expect_event("load"):
            await page.click("#signout")
    else:
        await page.goto(url)
    await page.wait_for_selector("#view-signin:not([hidden])")
    await page.fill("#token", token)
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#view-chat:not([hidden])")
