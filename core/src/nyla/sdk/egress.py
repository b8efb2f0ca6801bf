"""The server's egress guard for plugins that fetch an address a user or a model gave
(imported on its own: ``from nyla.sdk.egress import ...``).

The same guard the connectors' HTTP clients sit on (:mod:`nyla.connections.egress`): an
:class:`EgressPolicy` resolves a request's host and refuses loopback, private, link-local
(the metadata services), shared (CGNAT), reserved, multicast and unspecified addresses —
IPv4, IPv6 and IPv4 inside IPv6 — unless an operator allowed the host; a
:class:`GuardedTransport` checks every request it sends (so every redirect hop a client
follows by hand) and, with ``pin=True``, connects to the address it checked.
"""

from __future__ import annotations

from nyla.connections.egress import (
    EgressPolicy,
    EgressRefusedError,
    GuardedTransport,
    Resolver,
    refused_reason,
    system_resolver,
)

__all__ = [
    "EgressPolicy",
    "EgressRefusedError",
    "GuardedTransport",
    "Resolver",
    "refused_reason",
    "system_resolver",
]
