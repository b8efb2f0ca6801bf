"""Where the server may send a connector's requests: never to itself or its private network.

A connection can point a connector at a URL (a self-hosted Jira, a WebDAV share), and the
server then fetches it with the connection's token and shows the answer as items. Without a
guard that is server-side request forgery: a user aims a connection at ``127.0.0.1``, a
private address or a cloud's metadata service and reads what only the server can reach.

:class:`GuardedTransport` sits under every connector client. Before each request (the first
and every redirect, since a redirect is a new request through the transport) it resolves the
host and refuses loopback, private, link-local (the metadata services among them), shared,
reserved, multicast and unspecified addresses — IPv4, IPv6 and IPv4 inside IPv6 — unless the
operator allowed that host (``NYLA_EGRESS_ALLOW``, or the kernel setting ``egress_allow``).
On the real network the request is then sent to the address that was checked (the URL's
host replaced by it, TLS still verified against the name), so a DNS answer that changes
between the check and the connection cannot slip through.
"""

from __future__ import annotations

import urllib.request

import httpx

from nyla.connections.egress_policy import (
    RESOLVE_TIMEOUT_S,
    EgressPolicy,
    EgressRefusedError,
    Resolver,
    names_only_resolver,
    refused_reason,
    system_resolver,
)

__all__ = [
    "RESOLVE_TIMEOUT_S",
    "EgressPolicy",
    "EgressRefusedError",
    "GuardedTransport",
    "Resolver",
    "environment_proxies",
    "names_only_resolver",
    "refused_reason",
    "system_resolver",
]


class GuardedTransport(httpx.AsyncBaseTransport):
    """``inner`` behind an :class:`EgressPolicy` (see the module docstring). With ``pin``, the
    request goes to the address that was checked. ``proxies`` (scheme -> transport through the
    operator's proxy, from ``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY`` and ``NO_PROXY``)
    carry the requests a proxy applies to: still checked here, not pinned (the proxy
    connects), and a name only the proxy can resolve passes."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        policy: EgressPolicy,
        *,
        pin: bool,
        proxies: dict[str, httpx.AsyncBaseTransport] | None = None,
    ):
        self.inner, self.policy, self.pin = inner, policy, pin
        self.proxies = proxies or {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Check the request's host, then send it through ``inner`` (or the proxy)."""
        proxy = self.proxies.get(request.url.scheme)
        if proxy is not None and not urllib.request.proxy_bypass(request.url.host):
            await self.policy.check(request.url, unresolved_ok=True)
            return await proxy.handle_async_request(request)
        address = await self.policy.check(request.url)
        if self.pin and address is not None:
            host = request.url.host
            request.url = request.url.copy_with(host=address)
            if request.url.scheme == "https":
                request.extensions = {**request.extensions, "sni_hostname": host}
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the inner transport and the proxies'."""
        await self.inner.aclose()
        for proxy in self.proxies.values():
            await proxy.aclose()


def environment_proxies() -> dict[str, httpx.AsyncBaseTransport]:
    """Transports through the proxies the environment names, by URL scheme (what an httpx
    client would use by itself, were it not given a guarded transport)."""
    found = urllib.request.getproxies_environment()
    out: dict[str, httpx.AsyncBaseTransport] = {}
    for scheme in ("http", "https"):
        url = found.get(scheme) or found.get("all")
        if url:
            out[scheme] = httpx.AsyncHTTPTransport(proxy=url, retries=0)
    return out
