"""Making a connection: the settings checked against the connector's model, the connection
probed (its root listed with the tokens it will use) and only then stored.

One path for the web host, the CLI and the OAuth callback, so a connection that cannot list
its root is never saved, whoever makes it.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nyla.connections.base import capabilities
from nyla.connections.errors import ConnectorError
from nyla.connections.http import HttpPolicy, VendorHttp
from nyla.connections.redact import redact_paths, server_values
from nyla.connections.session import ConnectorSession
from nyla.connections.settings import (
    SettingsError,
    auth_of,
    check_server_only,
    validate_settings,
)
from nyla.errors import NylaError
from nyla.models.datasource import ConnectionInfo, TokenGrant

if TYPE_CHECKING:
    from nyla.connections.ports import ConnectionsPort

#: how long the probe of a new connection may take, seconds (kernel setting
#: ``connect_timeout_s``)
PROBE_TIMEOUT_S = 20.0


class ConnectionCheckError(NylaError, ValueError):
    """A new connection failed its probe (its root could not be listed); nothing was
    stored. The message says why in one line and names no server path the caller did not
    give."""


@dataclass
class NewConnection:
    """What a caller asks to connect (the API's body, the CLI's options)."""

    service: str
    user_id: str
    mandate_id: str | None = None
    label: str = ""
    account: str = ""
    settings: dict[str, Any] | None = None
    grant: TokenGrant | None = None


class _GivenToken:
    """The token source of a probe: the token just given, nothing to refresh it with (a
    rejected token is the vendor's 401)."""

    def __init__(self, token: str | None) -> None:
        self.value = token

    async def token(self) -> str | None:
        return self.value

    async def refresh(self, rejected: str | None) -> str | None:
        return rejected


def checked_settings(
    connections: ConnectionsPort, new: NewConnection, *, operator: bool
) -> tuple[Any, dict[str, Any]]:
    """The adapter and the settings to store, or the error that names what is wrong: an
    unknown service or setting (:class:`SettingsError`), a server-only setting from a caller
    who is not the operator (``PermissionDeniedError``)."""
    adapter = connections.adapters.get(new.service)
    if adapter is None:
        installed = ", ".join(sorted(connections.adapters)) or "none"
        raise SettingsError(f"unknown service {new.service!r}; installed: {installed}")
    given = dict(new.settings or {})
    if not operator:
        check_server_only(adapter, new.service, given)
    return adapter, validate_settings(adapter, new.service, given)


async def connect(
    connections: ConnectionsPort, new: NewConnection, *, operator: bool
) -> ConnectionInfo:
    """Validate, probe, then store ``new`` (see the module); ``operator``: the caller may
    set server-only settings (the CLI's user, a host's sysadmin)."""
    adapter, settings = checked_settings(connections, new, operator=operator)
    label = getattr(adapter, "label", "") or new.service
    if new.grant is None and auth_of(adapter) != "none":
        how = "sign in" if auth_of(adapter) == "oauth" else "paste an API token"
        raise SettingsError(f"{label} needs a sign-in: {how} to connect it")
    connection = ConnectionInfo(
        id=f"conn-{uuid.uuid4().hex[:12]}",
        service=new.service,
        user_id=new.user_id,
        mandate_id=new.mandate_id,
        account=new.account,
        label=new.label or label,
        settings=settings,
    )
    await probe(connections, adapter, connection, new.grant, given=new.settings or {})
    return await connections.store.add(
        service=new.service,
        user_id=new.user_id,
        account=new.account,
        label=connection.label,
        grant=new.grant,
        settings=settings,
        mandate_id=new.mandate_id,
        connection_id=connection.id,
    )


async def probe(
    connections: ConnectionsPort,
    adapter: Any,
    connection: ConnectionInfo,
    grant: TokenGrant | None,
    *,
    given: dict[str, Any],
) -> None:
    """List the root of the (unsaved) ``connection`` with ``grant``'s token; any failure is
    a :class:`ConnectionCheckError`. A connector that cannot browse is not probed."""
    if "browse" not in capabilities(adapter):
        return
    label = getattr(adapter, "label", "") or connection.service
    timeout = connections.connect_timeout_s
    try:
        async with asyncio.timeout(timeout), connections._client(adapter, connection) as client:
            http = VendorHttp(
                connection.service,
                connection.account or connection.id,
                client=client,
                auth=_GivenToken(grant.access_token if grant else None),
                policy=getattr(adapter, "http_policy", None) or HttpPolicy(),
                limiter=connections.limiter,
                sleep=connections.sleep,
            )
            await adapter.browse(ConnectorSession(connection, adapter, http), "")
    except TimeoutError:
        reason = f"no answer within {timeout:g} s"
    except ConnectorError as exc:
        reason = str(exc).removeprefix(f"{connection.service}: ")
    except OSError as exc:
        reason = f"it could not be read ({exc.strerror or type(exc).__name__})"
    except (ValueError, TypeError, LookupError, NylaError) as exc:
        reason = str(exc) or type(exc).__name__
    else:
        return
    keep = [str(v) for v in given.values() if isinstance(v, str) and v]
    hidden = [v for v in server_values(adapter, connection.settings) if v not in keep]
    reason = redact_paths(reason, hidden, keep)[:300]
    raise ConnectionCheckError(
        f"{label}: the connection was not saved because its root could not be listed: {reason}"
    )
