"""Which addresses the server may send a connector's requests to: the policy and the
resolvers of :mod:`nyla.connections.egress`, without httpx (see that module for why).

The connection service builds its :class:`EgressPolicy` when the kernel makes it; this module
keeps httpx (~9 MiB with what it imports) out of processes that never send a request, such
as a sync of a local folder.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nyla.connections.errors import ConnectorError

if TYPE_CHECKING:
    import httpx

Resolver = Callable[[str, int], Awaitable[list[str]]]

#: seconds a name may take to resolve before the request is refused
RESOLVE_TIMEOUT_S = 5.0

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class EgressRefusedError(ConnectorError):
    """The request would reach an address the server must not fetch for a connection."""

    code = "egress_refused"
    retryable = False


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (the operating system's resolver, bounded)."""
    loop = asyncio.get_running_loop()
    infos = await asyncio.wait_for(
        loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT_S
    )
    return sorted({str(info[4][0]) for info in infos})


async def names_only_resolver(host: str, port: int) -> list[str]:
    """For a replaced network (tests' ``MockTransport``): a name reaches no real address, so
    only literal addresses and the loopback names are checked. Pass a real resolver (or a
    table) to test what names resolve to."""
    if host.lower() in _LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return ["127.0.0.1"]
    return []


_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def refused_reason(address: str) -> str | None:
    """Why the server must not connect to ``address`` (``None``: a public address)."""
    try:
        ip: _Address = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address!r} is not an address"
    for embedded in _embedded(ip):
        reason = refused_reason(str(embedded))
        if reason:
            return reason
    checks = (
        ("loopback", ip.is_loopback),
        ("link-local (metadata services live there)", ip.is_link_local),
        ("private", ip.is_private),
        ("multicast", ip.is_multicast),
        ("unspecified", ip.is_unspecified),
        ("reserved", ip.is_reserved),
        ("not globally routable", not ip.is_global),
    )
    for name, hit in checks:
        if hit:
            return f"{address} is a {name} address"
    return None


def _embedded(ip: _Address) -> Iterable[_Address]:
    if isinstance(ip, ipaddress.IPv6Address):
        for inner in (ip.ipv4_mapped, ip.sixtofour):
            if inner is not None:
                yield inner
        if ip.teredo is not None:
            yield ip.teredo[1]


@dataclass(frozen=True)
class EgressPolicy:
    """Which hosts a connector may reach: public addresses, plus what the operator allowed."""

    resolve: Resolver = system_resolver
    allowed_hosts: frozenset[str] = frozenset()
    #: the network is replaced (tests' ``MockTransport``): a name that resolves to nothing
    #: reaches no real address and passes; on the real network it is refused
    replaced_network: bool = False

    @classmethod
    def configured(
        cls,
        resolve: Resolver,
        setting: str | Iterable[str] | None,
        *,
        replaced_network: bool = False,
    ) -> EgressPolicy:
        """The policy with the operator's allowed hosts (``setting``, else
        ``NYLA_EGRESS_ALLOW``: comma-separated host names or addresses)."""
        raw = setting if setting is not None else os.environ.get("NYLA_EGRESS_ALLOW", "")
        hosts = raw.split(",") if isinstance(raw, str) else list(raw)
        allowed = frozenset(h.strip().lower().strip("[]") for h in hosts if h.strip())
        return cls(resolve, allowed, replaced_network)

    async def check(self, url: httpx.URL, *, unresolved_ok: bool = False) -> str | None:
        """The checked address to connect to (``None``: the operator allowed the host, or a
        replaced network — or, with ``unresolved_ok``, a proxy — resolves the name); raises
        :class:`EgressRefusedError`."""
        host = url.host.lower().strip("[]")
        if host in self.allowed_hosts:
            return None
        try:
            ipaddress.ip_address(host.split("%", 1)[0])
            addresses = [host]
        except ValueError:
            port = url.port or (443 if url.scheme == "https" else 80)
            try:
                addresses = await self._resolve(host, port)
            except EgressRefusedError:
                if not unresolved_ok:
                    raise
                addresses = []  # only the proxy knows this name: it is the proxy's to reach
        if not addresses and not (self.replaced_network or unresolved_ok):
            raise EgressRefusedError(f"{host} resolves to no address", service="egress")
        for address in addresses:
            reason = refused_reason(address)
            if reason:
                raise EgressRefusedError(
                    f"refused to connect to {host}: {reason}. An operator can allow the host "
                    "with NYLA_EGRESS_ALLOW",
                    service="egress",
                )
        return addresses[0] if addresses else None

    async def _resolve(self, host: str, port: int) -> list[str]:
        try:
            return await self.resolve(host, port)
        except (OSError, TimeoutError) as exc:
            raise EgressRefusedError(
                f"cannot resolve {host}: {type(exc).__name__}", service="egress"
            ) from exc
