"""Fixtures: a local test site on 127.0.0.1 (a real HTTP server in a thread) and a fake
network behind an injected resolver, for the web toolbox's tests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import httpx
import pytest

from nyla.testing.processes import http_server_thread

ARTICLE = b"""<!doctype html><html><head><meta charset="utf-8"><title>Swiss VAT 2026</title>
<script>var tracking = "do not read me";</script><style>body{color:red}</style></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<header>Site banner</header>
<main><h1>Swiss VAT rates</h1><p>The standard rate is <b>8.1 %</b> since 2024.</p>
<h2>Reduced rates</h2><ul><li>Food: 2.6 %</li><li>Lodging: 3.8 %</li></ul>
<table><tr><th>Kind</th><th>Rate</th></tr><tr><td>Standard</td><td>8.1</td></tr></table>
<p>Gr\xc3\xbcezi from Z\xc3\xbcrich.</p></main>
<footer>Copyright footer</footer></body></html>"""

#: path -> (status, headers, body, seconds to wait before answering)
PAGES: dict[str, tuple[int, dict[str, str], bytes, float]] = {
    "/article": (200, {"Content-Type": "text/html; charset=utf-8"}, ARTICLE, 0),
    "/moved": (302, {"Location": "/article"}, b"", 0),
    "/notes.txt": (200, {"Content-Type": "text/plain"}, "plain n\u00f6tes\n".encode(), 0),
    "/image.png": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + b"\0" * 64, 0),
    "/big": (200, {"Content-Type": "text/html"}, b"<p>" + b"x" * 300_000 + b"</p>", 0),
    "/slow": (200, {"Content-Type": "text/html"}, b"<p>late</p>", 3.0),
    "/missing": (404, {"Content-Type": "text/html"}, b"<p>gone</p>", 0),
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status, headers, body, wait = PAGES.get(self.path, PAGES["/missing"])
        if wait:
            time.sleep(wait)
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def site() -> Iterator[str]:
    """The base URL of the local test site (``http://127.0.0.1:<port>``)."""
    with http_server_thread(_Handler) as base:
        yield base


#: what the fake network's names resolve to
DNS = {
    "localhost": ["127.0.0.1"],
    "public.example": ["93.184.216.34"],
    "news.example": ["2606:2800:220:1:248:1893:25c8:1946"],
    "intranet.example": ["10.0.0.5"],
    "sneaky.example": ["93.184.216.34", "127.0.0.1"],
    "mapped.example": ["::ffff:169.254.169.254"],
    "cgnat.example": ["100.100.100.200"],
}


async def table_resolver(host: str, port: int) -> list[str]:
    """The fake network's resolver."""
    return DNS.get(host.lower(), [])


class FakeNet:
    """The public side of the fake network: answers pages and redirects by path and records
    every request that reached it (host it connected to, Host header, path)."""

    REDIRECTS = {
        "/to-metadata": "http://169.254.169.254/latest/meta-data/",
        "/to-intranet": "http://intranet.example/admin",
        "/to-decimal-loopback": "http://2130706433/",
        "/to-v6-loopback": "http://[::1]:8080/",
        "/to-relative": "/page",
    }

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.seen.append((request.url.host, request.headers["host"], request.url.path))
        target = self.REDIRECTS.get(request.url.path)
        if target:
            return httpx.Response(302, headers={"Location": target})
        return httpx.Response(
            200,
            headers={"Content-Type": "text/html"},
            content=b"<html><title>Public</title><body><p>public page</p></body></html>",
        )

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)


@pytest.fixture
def net() -> FakeNet:
    return FakeNet()
