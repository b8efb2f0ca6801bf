"""Fetching one page for ``readUrl`` behind the server's egress guard.

Every hop — the first request and each redirect, followed here by hand — goes through a
:class:`~nyla.sdk.egress.GuardedTransport`: the host is resolved, every address it resolves
to is checked (loopback, private, link-local and the metadata services, shared/CGNAT,
reserved, IPv4 inside IPv6 are refused), and the connection goes to the address that was
checked, so a DNS answer that changes in between cannot slip through. Hosts written as
numbers in the forms only old resolvers read (``2130706433``, ``0x7f.1``, ``0177.0.0.1``)
are turned into the address they mean first and checked as that. The answer must be a text
type and at most ``max_bytes`` long; the whole fetch has one deadline.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass, field

import httpx

from nyla.sdk import config_value
from nyla.sdk.egress import (
    EgressPolicy,
    EgressRefusedError,
    GuardedTransport,
    Resolver,
    refused_reason,
    system_resolver,
)

#: content types ``readUrl`` reads (anything else is refused before the body is read)
READABLE_TYPES = frozenset(
    {
        "text/html",
        "application/xhtml+xml",
        "text/plain",
        "text/markdown",
        "text/csv",
        "text/xml",
        "application/xml",
        "application/json",
    }
)
DEFAULT_MAX_BYTES = 2_000_000
DEFAULT_TIMEOUT_S = 15.0
MAX_REDIRECTS = 5
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$", re.IGNORECASE)


class PageError(Exception):
    """The page cannot be read; ``code`` is the tool's error code."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Page:
    """A fetched page: the address asked for, the one answered (after redirects), the
    content type, its charset (``None``: not given) and the body."""

    url: str
    final_url: str
    content_type: str
    charset: str | None
    body: bytes


def numeric_host(host: str) -> str | None:
    """The dotted address a host written as numbers means (``2130706433`` -> ``127.0.0.1``),
    ``None`` for a name or a canonical address; :class:`PageError` when it is no address."""
    bare = host.rstrip(".")
    labels = bare.split(".")
    if not bare or not all(_NUMERIC_LABEL.match(label) for label in labels):
        return None
    try:
        ipaddress.IPv4Address(bare)
        return None
    except ValueError:
        pass
    try:
        return socket.inet_ntoa(socket.inet_aton(bare))
    except OSError:
        raise PageError(f"{host!r} is not a valid address", "INVALID_URL") from None


def checked_url(raw: str) -> httpx.URL:
    """``raw`` as an http(s) URL without credentials, its numeric host made canonical and
    checked; :class:`PageError` or :class:`EgressRefusedError` otherwise."""
    try:
        url = httpx.URL(raw.strip())
    except (httpx.InvalidURL, ValueError) as exc:
        raise PageError(f"not a valid URL: {exc}", "INVALID_URL") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise PageError("only http:// and https:// addresses can be read", "INVALID_URL")
    if url.userinfo:
        raise PageError("an address with a user name or password is not read", "INVALID_URL")
    address = numeric_host(url.host)
    if address is not None:
        reason = refused_reason(address)
        if reason:
            raise EgressRefusedError(
                f"refused to connect to {url.host} ({address}): {reason}", service="egress"
            )
        url = url.copy_with(host=address)
    return url


@dataclass
class PageFetcher:
    """Fetches pages for ``readUrl``: ``resolve`` names to addresses (the system resolver),
    ``allowed_hosts`` the operator let through although private (``NYLA_WEB_ALLOW``),
    ``transport`` the network under the guard (a test's ``MockTransport``)."""

    resolve: Resolver = system_resolver
    allowed_hosts: frozenset[str] = frozenset()
    transport: httpx.AsyncBaseTransport | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_redirects: int = MAX_REDIRECTS
    headers: dict[str, str] = field(
        default_factory=lambda: {
            "User-Agent": "nyla-readUrl/0.1 (+https://github.com/nyla)",
            "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1",
        }
    )

    @classmethod
    def configured(cls) -> PageFetcher:
        """The fetcher the settings describe (``NYLA_WEB_ALLOW``, ``NYLA_WEB_MAX_BYTES``,
        ``NYLA_WEB_TIMEOUT_S``)."""
        allow = config_value("NYLA_WEB_ALLOW", "") or ""
        return cls(
            allowed_hosts=frozenset(
                h.strip().lower().strip("[]") for h in allow.split(",") if h.strip()
            ),
            max_bytes=int(config_value("NYLA_WEB_MAX_BYTES", str(DEFAULT_MAX_BYTES)) or 0),
            timeout_s=float(config_value("NYLA_WEB_TIMEOUT_S", str(DEFAULT_TIMEOUT_S)) or 0),
        )

    async def fetch(self, raw_url: str) -> Page:
        """The page at ``raw_url`` (see the module docstring); raises :class:`PageError` or
        :class:`~nyla.sdk.egress.EgressRefusedError`."""
        policy = EgressPolicy(self.resolve, self.allowed_hosts)
        inner = self.transport or httpx.AsyncHTTPTransport(retries=0)
        guarded = GuardedTransport(inner, policy, pin=True)
        try:
            async with asyncio.timeout(self.timeout_s):
                async with httpx.AsyncClient(
                    transport=guarded,
                    follow_redirects=False,
                    timeout=self.timeout_s,
                    trust_env=False,
                ) as client:
                    return await self._follow(client, raw_url)
        except TimeoutError:
            raise PageError(f"the page took longer than {self.timeout_s:g} s", "TIMEOUT") from None
        except httpx.TimeoutException:
            raise PageError(f"the page took longer than {self.timeout_s:g} s", "TIMEOUT") from None
        except httpx.TransportError as exc:
            raise PageError(f"cannot reach the page: {type(exc).__name__}", "UNREACHABLE") from None

    async def _follow(self, client: httpx.AsyncClient, raw_url: str) -> Page:
        url = checked_url(raw_url)
        for _hop in range(self.max_redirects + 1):
            request = client.build_request("GET", url, headers=self.headers)
            response = await client.send(request, stream=True)
            try:
                if response.is_redirect:
                    location = response.headers.get("location", "")
                    url = checked_url(str(url.join(location)))
                    continue
                return await self._read(response, raw_url, url)
            finally:
                await response.aclose()
        raise PageError(f"more than {self.max_redirects} redirects", "TOO_MANY_REDIRECTS")

    async def _read(self, response: httpx.Response, raw_url: str, url: httpx.URL) -> Page:
        if response.status_code >= 400:
            raise PageError(f"the page answered HTTP {response.status_code}", "HTTP_ERROR")
        content_type, charset = _content_type(response.headers.get("content-type", ""))
        if content_type not in READABLE_TYPES:
            raise PageError(
                f"{content_type or 'an unnamed content type'} is not a readable page "
                f"(readable: {', '.join(sorted(READABLE_TYPES))})",
                "UNSUPPORTED_CONTENT_TYPE",
            )
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise self._too_large()
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body.extend(chunk)
            if len(body) > self.max_bytes:
                raise self._too_large()
        return Page(raw_url, str(url), content_type, charset, bytes(body))

    def _too_large(self) -> PageError:
        return PageError(f"the page is larger than {self.max_bytes} bytes", "TOO_LARGE")


def _content_type(header: str) -> tuple[str, str | None]:
    main, *params = header.split(";")
    charset = None
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip('"').lower()
    return main.strip().lower(), charset
