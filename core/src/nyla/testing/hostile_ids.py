"""Hostile item ids, paths and names, and the checks that none takes a connector outside its
root — for every connector's tests.

:data:`HOSTILE` is the table: dot segments plain, percent-encoded (once and twice), with
backslashes, with control characters, in Unicode look-alikes, too long; and values that are
harmless only when quoted (``?``, ``#``, ``&``, an absolute path, another host). A plugin's
test runs each through its adapter's browse, download, upload or read on a
:func:`wire_context` (a real :class:`~nyla.connections.http.VendorHttp` over an
``httpx.MockTransport`` that records every request) and asserts :func:`failures` is empty:

- a *traversal* value (``traversal=True``) must be refused with a typed connector error, and
  no request may carry it;
- any other value may be sent, but every request must stay on the vendor's host, below its
  base path, with the value as data (not cut at a ``?`` or ``#``, not turned into a query).

The checks here decode and normalise independently of :mod:`nyla.sdk.paths`, so a fault in
the helpers under test is not mirrored by the test.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from nyla.connections.errors import ConnectorError
from nyla.connections.http import HttpPolicy, VendorHttp
from nyla.models.datasource import ConnectionInfo

#: what the traversal values try to reach; a request that names one of them escaped
MARKERS = ("evil", "passwd")


@dataclass(frozen=True)
class Hostile:
    """One hostile value: ``traversal`` ones must be refused before any request."""

    label: str
    value: str
    traversal: bool = True


def _traversals() -> list[Hostile]:
    plain = [
        ("dot-dot", ".."),
        ("dot-dot then name", "../evil"),
        ("two levels up", "../../evil"),
        ("etc passwd", "../../../../../../etc/passwd"),
        ("down then up", "a/../../evil"),
        ("deep down then up", "a/b/../../../evil"),
        ("dot then dot-dot", "./../evil"),
        ("dot-dot, blank", ".. /evil"),
        ("dot-dot-semicolon", "..;/evil"),
        ("three dots", ".../evil"),
    ]
    encoded = [
        ("encoded slash", "..%2fevil"),
        ("encoded dots", "%2e%2e/evil"),
        ("all encoded", "%2e%2e%2fevil"),
        ("all encoded, upper", "%2E%2E%2Fevil"),
        ("double encoded", "%252e%252e%252fevil"),
        ("encoded backslash", "..%5cevil"),
        ("encoded dots and backslash", "%2e%2e%5cevil"),
        ("overlong UTF-8 slash", "..%c0%afevil"),
    ]
    backslash = [
        ("backslash", "..\\evil"),
        ("backslash twice", "..\\..\\evil"),
        ("leading backslash", "\\..\\evil"),
        ("down then up, backslash", "a\\..\\..\\evil"),
    ]
    control = [
        ("NUL", "evil\x00.txt"),
        ("encoded NUL", "evil%00.txt"),
        ("line feed", "ev\nil"),
        ("header injection", "evil\r\nX-Injected: 1"),
        ("escape", "evil\x1b[31m"),
        ("DEL", "evil\x7f"),
    ]
    lookalike = [
        ("full-width dots", "\uff0e\uff0e/evil"),
        ("full-width dots and solidus", "\uff0e\uff0e\uff0fevil"),
        ("two-dot leader", "\u2025/evil"),
        ("full-width solidus", "..\uff0fevil"),
        ("full-width reverse solidus", "..\uff3cevil"),
        ("division slash", "..\u2215evil"),
        ("fraction slash", "..\u2044evil"),
        ("vertical two dots", "\ufe30/evil"),
    ]
    long = [
        ("very long name", "a" * 5000 + "evil"),
        ("very long path", "evil/" + "a/" * 3000),
    ]
    return [Hostile(label, value) for label, value in plain + encoded + backslash + control] + [
        Hostile(label, value) for label, value in lookalike + long
    ]


def _quotables() -> list[Hostile]:
    values = [
        ("absolute path", "/etc/evil"),
        ("another host, scheme-relative", "//evil.example/x"),
        ("another host", "https://evil.example/x"),
        ("file URL", "file:///etc/evil"),
        ("query", "qry?evil=1"),
        ("fragment", "frag#evil"),
        ("ampersand", "amp&evil=1"),
        ("semicolon", "semi;evil"),
        ("blanks", "sp ace evil"),
        ("lone percent", "%evil"),
        ("encoded letter", "e%76il"),
        ("accents", "\u00e9vil \u00fcn\u00efcode"),
        ("tilde", "~evil"),
        ("at sign", "@evil"),
    ]
    return [Hostile(label, value, traversal=False) for label, value in values]


#: the table every connector runs (52 values)
HOSTILE: tuple[Hostile, ...] = (*_traversals(), *_quotables())


class _Token:
    async def token(self) -> str | None:
        return "token-1"

    async def refresh(self, rejected: str | None) -> str | None:
        return "token-1"


@dataclass
class WireContext:
    """What an adapter method gets (its connection and vendor HTTP client), over a
    transport that records every request before ``respond`` answers it."""

    connection: ConnectionInfo
    http: VendorHttp
    requests: list[httpx.Request] = field(default_factory=list)


async def _no_sleep(seconds: float) -> None:
    return None


def wire_context(
    service: str,
    respond: Callable[[httpx.Request], httpx.Response],
    *,
    base_url: str | None = None,
    settings: dict[str, Any] | None = None,
    account: str = "ada@example.com",
    auth_scheme: str = "Bearer",
) -> WireContext:
    """A :class:`WireContext` for ``service``: the client's base URL is ``base_url`` (the
    adapter's), the connection carries ``settings``; one attempt per request."""
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return respond(request)

    client = httpx.AsyncClient(
        base_url=base_url or "", transport=httpx.MockTransport(handler), follow_redirects=True
    )
    policy = HttpPolicy(max_attempts=1, auth_scheme=auth_scheme)
    http = VendorHttp(
        service, account, client=client, auth=_Token(), policy=policy, sleep=_no_sleep
    )
    connection = ConnectionInfo(
        id=f"{service}-1", service=service, user_id="u1", account=account, settings=settings or {}
    )
    return WireContext(connection=connection, http=http, requests=requests)


def _decoded(text: str) -> str:
    for _ in range(3):
        text = unquote(text, errors="replace")
    return unicodedata.normalize("NFKC", text)


def _dots(segment: str) -> bool:
    head = segment.split(";", 1)[0].replace("\u3002", ".")
    return "." in head and not head.strip(". \t")


def _below(path: str, base_path: str) -> bool:
    resolved = posixpath.normpath("/" + _decoded(path).replace("\\", "/").lstrip("/"))
    base = posixpath.normpath("/" + _decoded(base_path).lstrip("/"))
    return resolved == base or resolved.startswith(base.rstrip("/") + "/")


def _where(request: httpx.Request, bases: Iterable[str]) -> list[str]:
    url = request.url
    raw_path = url.raw_path.split(b"?", 1)[0].decode("ascii", "replace")
    homes = [urlsplit(b) for b in bases]
    here = [h for h in homes if (url.scheme, url.host, url.port) == (h.scheme, h.hostname, h.port)]
    if not here:
        return [f"{request.method} {url} is on another host"]
    if any(_below(raw_path, h.path or "/") for h in here):
        return []
    return [f"{request.method} {raw_path} is outside {', '.join(h.path for h in here)}"]


def escape_reasons(request: httpx.Request, hostile: Hostile, bases: Iterable[str]) -> list[str]:
    """Why ``request`` left its vendor's ``bases`` or let ``hostile`` change its shape
    (empty: it did neither)."""
    reasons = _where(request, bases)
    raw_path = request.url.raw_path.split(b"?", 1)[0].decode("ascii", "replace")
    for segment in raw_path.split("/"):
        decoded = _decoded(segment)
        if _dots(decoded) or re.search(r"[/\\\x00-\x1f\x7f]", decoded):
            reasons.append(f"segment {segment!r} is a dot segment or holds a separator")
    for key, _ in request.url.params.multi_items():
        if any(m in key.lower() for m in MARKERS):
            reasons.append(f"the value became the query parameter {key!r}")
    head = re.split(r"[?#&;]", hostile.value)[0]
    cut = head and head != hostile.value
    if cut and any(_decoded(s) == head for s in raw_path.split("/")):
        reasons.append(f"the value was cut to {head!r}")
    return reasons


def carries(request: httpx.Request, hostile: Hostile) -> bool:
    """Whether ``request`` carries (part of) ``hostile`` in its URL."""
    text = _decoded(str(request.url)).lower()
    markers = [m for m in MARKERS if m in hostile.value.lower()]
    return any(m in text for m in markers) if markers else True


@dataclass
class Probe:
    """What one hostile value did to one operation: ``refused`` (a typed error, nothing
    sent), ``sent`` (requests, all confined), ``escaped``, ``crashed`` (an untyped error: a
    500 for a host), ``accepted`` (a traversal value that was not refused)."""

    hostile: Hostile
    outcome: str
    detail: str = ""

    @property
    def failed(self) -> bool:
        """Whether this outcome breaks the rule for its kind of value."""
        if self.outcome in ("escaped", "crashed", "accepted"):
            return True
        return self.hostile.traversal and self.outcome != "refused"


Check = Callable[[Hostile, list[httpx.Request]], list[str]]


def http_check(bases: Iterable[str]) -> Check:
    """The check of a wire test: every request confined to ``bases``."""
    allowed = list(bases)

    def check(hostile: Hostile, requests: list[httpx.Request]) -> list[str]:
        return [r for req in requests for r in escape_reasons(req, hostile, allowed)]

    return check


async def probe(
    hostile: Hostile,
    call: Callable[[str], Awaitable[Any]],
    requests: list[httpx.Request],
    check: Check,
) -> Probe:
    """Run ``call(hostile.value)`` and judge it by the requests it added and ``check``."""
    start = len(requests)
    error: Exception | None = None
    try:
        await call(hostile.value)
    except ConnectorError as exc:
        error = exc
    except Exception as exc:
        return Probe(hostile, "crashed", f"{type(exc).__name__}: {exc}"[:300])
    sent = requests[start:]
    reasons = check(hostile, sent)
    if reasons:
        return Probe(hostile, "escaped", "; ".join(reasons)[:300])
    if hostile.traversal and any(carries(r, hostile) for r in sent):
        return Probe(hostile, "sent", f"{sent[-1].method} {sent[-1].url}"[:300])
    if error is not None and not sent:
        return Probe(hostile, "refused", str(error)[:200])
    if hostile.traversal and error is None:
        return Probe(hostile, "accepted", "no error")
    return Probe(hostile, "sent" if sent else "refused", str(error or "")[:200])


async def probe_all(
    call: Callable[[str], Awaitable[Any]],
    requests: list[httpx.Request],
    check: Check,
    table: Iterable[Hostile] = HOSTILE,
) -> list[Probe]:
    """:func:`probe` for every value of ``table``."""
    return [await probe(h, call, requests, check) for h in table]


def failures(probes: Iterable[Probe]) -> list[str]:
    """One line per probe that broke its rule (empty: all held)."""
    return [
        f"{p.hostile.label} ({p.hostile.value[:40]!r}): {p.outcome} {p.detail}"
        for p in probes
        if p.failed
    ]


def tally(probes: Iterable[Probe]) -> dict[str, int]:
    """How many probes ended in each outcome (for reports)."""
    return dict(Counter(p.outcome for p in probes))
