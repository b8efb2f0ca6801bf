"""What every route reaches through ``request.app.state.nyla``: the kernel and the host's
services built on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import Request

from nyla_host.auth import Authenticator
from nyla_host.runs import RunManager
from nyla_host.tokens import TokenStore

if TYPE_CHECKING:
    from nyla import Kernel


@dataclass
class HostSettings:
    """Tunables of a host. ``ping_interval_s``: SSE keep-alive comment period."""

    ping_interval_s: float = 15.0
    max_upload_bytes: int = 50 * 1024 * 1024
    default_model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class HostState:
    """The kernel plus the host's token store, authenticator and run manager."""

    kernel: Kernel
    auth: Authenticator
    tokens: TokenStore
    runs: RunManager
    settings: HostSettings
    services: dict[str, Any] = field(default_factory=dict)


def host(request: Request) -> HostState:
    """The host state of the app serving ``request``."""
    return request.app.state.nyla
