"""An operator's first hour with the Teams bot, in headless Chromium against a served host
(``nyla serve`` with the installed Teams bot plugin and the demo model). Microsoft runs on
127.0.0.1 in this test: Bot Framework's OpenID metadata and keys, Entra ID's token endpoint
and the Bot Connector service that receives the bot's messages.

Through the page alone the operator binds the tenant; a person then writes in a meeting chat
(a signed activity, as Teams sends it); the operator sees the meeting with its transcript,
keeps a persistent directive, sends a one-shot director prompt and watches the answer arrive
in the chat, then removes the directive. Screenshots: docs/screenshots/teams-NN-*.png."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from nyla.testing import import_file

from .browsing import MARKS, holds, page_fixture, served_fixture, shot, watch  # noqa: F401
from .served import free_port

pytestmark = MARKS

SCREENSHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"
FAKE = Path(__file__).resolve().parents[3] / "plugins/features/teamsbot/tests/microsoft.py"
ms = import_file(FAKE, "teams_microsoft_fake_journey")
PORT = free_port()
LOCAL = f"http://127.0.0.1:{PORT}"
MODEL_DELAY = 0.01
SERVED_ENV = {
    "NYLA_TEAMS_APP_ID": ms.APP_ID,
    "NYLA_TEAMS_APP_PASSWORD": ms.APP_PASSWORD,
    "NYLA_TEAMS_OPENID_URL": f"{LOCAL}/openid",
    "NYLA_TEAMS_LOGIN_URL": f"{LOCAL}/login",
}
#: the local paths of the fake Microsoft and the addresses they stand for
ROUTES = {
    "/openid": ms.OPENID_URL,
    "/keys": ms.JWKS_URL,
    "/login/": "https://login.microsoftonline.com/",
    "/teams/": ms.SERVICE_URL,
}


class LocalMicrosoft:
    """The fake Microsoft of the plugin's tests, served over HTTP on 127.0.0.1."""

    def __init__(self) -> None:
        self.fake = ms.Microsoft(jwks_url=f"{LOCAL}/keys")
        fake = self.fake

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                target = next(
                    (
                        real + self.path[len(p) :]
                        for p, real in ROUTES.items()
                        if self.path.startswith(p)
                    ),
                    None,
                )
                if target is None:
                    self.send_error(404)
                    return
                request = httpx.Request(
                    self.command, target, content=body, headers=dict(self.headers.items())
                )
                response = fake.handle(request)
                self.send_response(response.status_code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(response.content)))
                self.end_headers()
                self.wfile.write(response.content)

            do_GET = do_POST = _answer

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ms.Microsoft:
        self.thread.start()
        return self.fake

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


async def step(page, number: int, name: str) -> None:
    await shot(page, f"teams-{number:02d}-{name}", SCREENSHOTS)


async def test_an_operator_directs_the_bot_in_a_meeting(served, page):
    server, token = served
    with LocalMicrosoft() as microsoft:
        refused = watch(page)
        await page.goto(server.url + "/")
        await page.fill("#token", token)
        await page.keyboard.press("Enter")
        await page.wait_for_selector("#view-chat:not([hidden])")

        # the panel says the bot is configured; the operator binds the tenant
        await page.click(".tab[data-view=teams]")
        await page.wait_for_selector("#teams-panel:not([hidden])")
        assert ms.APP_ID in await page.text_content("#teams-status")
        await page.fill("#teams-tenant", ms.TENANT)
        await page.fill("#teams-runas", "teams-service")
        await page.fill("#teams-mandate", "m1")
        await page.click("#teams-bind button[type=submit]")
        await holds(
            page, f"document.querySelector('#teams-bindings').textContent.includes('{ms.TENANT}')"
        )
        await step(page, 1, "bound")

        # Megan writes in the meeting chat; Teams posts the signed activity to the bot
        meeting = ms.activity("meeting", "Where do we stand with the budget?")
        meeting["serviceUrl"] = f"{LOCAL}/teams/"
        async with httpx.AsyncClient(timeout=30) as client:
            unsigned = await client.post(f"{server.url}/api/teams/messages", json=meeting)
            assert unsigned.status_code == 401
            signed = await client.post(
                f"{server.url}/api/teams/messages",
                json=meeting,
                headers={"Authorization": microsoft.header(serviceurl=f"{LOCAL}/teams/")},
            )
            assert signed.json() == {"outcome": "accepted"}, signed.text

        # the meeting shows up with its transcript; the bot's answer went to the chat
        await page.click("#teams-refresh")
        await page.wait_for_selector("#teams-conversations .teams-conv")
        await page.click("#teams-conversations .teams-conv")
        await holds(
            page, "document.querySelectorAll('#teams-transcript .teams-line.out').length === 1"
        )
        assert "Where do we stand with the budget?" in await page.text_content("#teams-transcript")
        assert [s["conversation"] for s in microsoft.sent] == [ms.MEETING_ID]
        assert microsoft.sent[0]["replyTo"] == meeting["id"]
        await step(page, 2, "meeting")

        # a persistent directive, then a one-shot director prompt
        await page.check("#teams-persistent")
        await page.fill("#teams-prompt", "Always answer in English.")
        await page.click("#teams-director button[type=submit]")
        await holds(
            page,
            "document.querySelector('#teams-directives').textContent.includes('Always answer in English.')",
        )
        await page.uncheck("#teams-persistent")
        await page.fill("#teams-prompt", "Summarise the meeting so far")
        await page.click("#teams-director button[type=submit]")
        await holds(page, "document.querySelector('#teams-sent').textContent.includes('Delivered')")
        assert len(microsoft.sent) == 2
        directed = microsoft.sent[1]
        assert directed["conversation"] == ms.MEETING_ID and directed["replyTo"] is None
        assert directed["body"]["text"].strip()
        await holds(
            page,
            "[...document.querySelectorAll('#teams-transcript .teams-line')].some(l => l.dataset.source === 'director')",
        )
        await step(page, 3, "directed")

        # the directive is removed from the panel
        await page.click("#teams-directives button.link")
        await holds(
            page,
            "document.querySelector('#teams-directives').textContent.includes('No persistent directives')",
        )
        await step(page, 4, "removed")
    assert refused == [], refused
