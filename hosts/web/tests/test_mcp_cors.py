"""CORS on ``/mcp`` of a live ``nyla serve``, for MCP clients that run in a browser: the
preflight allows the streamable-HTTP headers from any origin, without credentials; every
answer (the 401 with its challenge, the JSON-RPC answer, the 405 of a GET) carries the
origin header and exposes what such a client reads. Checked over HTTP with httpx and, where
the browser enforces it, from a page of another origin in headless Chromium."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import httpx

from nyla.testing.processes import http_server_thread

from .browsing import MARKS, page_fixture, served_fixture  # noqa: F401
from .mcp_wire import INITIALIZE

pytestmark = MARKS
MODEL_DELAY = 0.01

ORIGIN = "http://mcp-client.localhost"
ACCEPT = {"Accept": "application/json, text/event-stream", "Origin": ORIGIN}


def _listed(value: str) -> set[str]:
    return {part.strip().lower() for part in value.split(",")}


def _cors(response: httpx.Response) -> None:
    assert response.headers.get_list("access-control-allow-origin") == ["*"], response.headers
    assert "access-control-allow-credentials" not in response.headers
    exposed = _listed(response.headers["access-control-expose-headers"])
    assert {"mcp-session-id", "www-authenticate", "mcp-protocol-version"} <= exposed


async def test_mcp_answers_any_origin_without_credentials(served):
    server, token = served
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        asked = "authorization, content-type, mcp-protocol-version, mcp-session-id"
        preflight = await http.options(
            "/mcp",
            headers={
                "Origin": ORIGIN,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": asked,
            },
        )
        assert preflight.status_code == 204, preflight.text
        assert preflight.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-credentials" not in preflight.headers
        assert _listed(asked) <= _listed(preflight.headers["access-control-allow-headers"])
        assert {"post", "get", "delete"} <= _listed(
            preflight.headers["access-control-allow-methods"]
        )

        refused = await http.post("/mcp", json=INITIALIZE, headers=ACCEPT)
        assert refused.status_code == 401
        _cors(refused)
        assert refused.headers["www-authenticate"].startswith("Bearer resource_metadata=")

        signed = {**ACCEPT, "Authorization": f"Bearer {token}"}
        answered = await http.post("/mcp", json=INITIALIZE, headers=signed)
        assert answered.status_code == 200, answered.text
        _cors(answered)
        assert answered.headers.get_list("content-type") == ["application/json"]
        assert answered.json()["result"]["serverInfo"]["name"] == "nyla"

        for method in ("GET", "DELETE"):
            no_stream = await http.request(method, "/mcp", headers=signed)
            assert no_stream.status_code == 405, (method, no_stream.text)
            _cors(no_stream)


class _ClientPage(BaseHTTPRequestHandler):
    """A page of another origin (another port of loopback: the browser lets loopback pages
    reach loopback) where an MCP client would run."""

    def do_GET(self) -> None:
        body = b"<p>an MCP client</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


async def test_a_page_of_another_origin_calls_mcp_in_chromium(served, page):
    """The browser enforces CORS: a page served from another origin posts to /mcp with its
    bearer header and protocol version, and reads the answer and the 401's challenge."""
    server, token = served
    script = """async ([url, token, hello]) => {
      const call = (headers) => fetch(url, { method: "POST", body: JSON.stringify(hello),
        headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream",
                   "mcp-protocol-version": "2025-06-18", ...headers } });
      const refused = await call({});
      const answered = await call({ Authorization: `Bearer ${token}` });
      return { refused: refused.status, challenge: refused.headers.get("WWW-Authenticate"),
               status: answered.status, body: await answered.json() };
    }"""
    with http_server_thread(_ClientPage) as origin:
        await page.goto(f"{origin}/")
        seen = await page.evaluate(script, [f"{server.url}/mcp", token, INITIALIZE])
    assert seen["refused"] == 401
    assert seen["challenge"].startswith(f'Bearer resource_metadata="{server.url}/.well-known/')
    assert seen["status"] == 200, json.dumps(seen)
    assert seen["body"]["result"]["serverInfo"]["name"] == "nyla"
