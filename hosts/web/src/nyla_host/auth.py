"""Authentication, deny by default: every route declares the role it needs through one of
the dependencies below (``need_user``, ``need_mandate_admin``, ``need_sysadmin``); a route
without one is public only when it is listed in :data:`PUBLIC_PATHS`, which a test checks.

A bearer credential is tried in order: the host app's auth hooks, API tokens, then OIDC
JWTs (when configured). The first identity wins."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import HTTPException, Request

from nyla_host.identity import Identity, Role

log = logging.getLogger(__name__)

#: An auth hook a host app passes to ``create_app``: it receives the request and returns an
#: identity, or ``None`` to let the next authenticator try. Sync or async.
AuthHook = Callable[[Request], "Identity | Awaitable[Identity | None] | None"]

#: Routes reachable without identity: health, the sign-in page with its assets, the
#: OAuth callbacks the connectors' providers redirect the browser to, signed download
#: links (their signature is the credential) and the Teams bot's messaging endpoint (the Bot
#: Connector service's JWT is its credential, checked by the bot on every activity), and the
#: OAuth authorization server of the MCP endpoint (its metadata, registration, authorization,
#: token and revocation endpoints check their own credentials; the consent page's script
#: calls the API as the signed-in person).
PUBLIC_PATHS: frozenset[str] = frozenset(
    {
        "/healthz",
        "/",
        "/static/{path:path}",
        "/api/connections/oauth/{service}/callback",
        "/api/settings/sections/{section_id}/sign-in/callback",
        "/api/files/{file_id}/download",
        "/api/connections/{connection_id}/items/download",
        "/api/teams/messages",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/oauth/register",
        "/oauth/authorize",
        "/oauth/token",
        "/oauth/revoke",
        "/oauth/consent",
    }
)


def bearer(request: Request) -> str | None:
    """The bearer credential of a request (``Authorization: Bearer`` only: a credential in
    the URL would end up in logs and browser history)."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


class Authenticator:
    """The chain of authenticators a host uses."""

    def __init__(self, tokens: Any, oidc: Any = None, hooks: list[AuthHook] | None = None):
        self.tokens = tokens
        self.oidc = oidc
        self.hooks = list(hooks or [])

    async def identify(self, request: Request) -> Identity | None:
        """The caller's identity, or ``None``."""
        for hook in self.hooks:
            result = hook(request)
            if inspect.isawaitable(result):
                result = await result
            if result is not None:
                return result
        credential = bearer(request)
        if credential is None:
            return None
        identity = await self.tokens.verify(credential)
        if identity is None and self.oidc is not None and credential.count(".") == 2:
            try:
                identity = await self.oidc.verify(credential)
            except Exception as exc:  # the provider's key set is unreachable
                log.warning("OIDC key set unavailable: %s", exc)
                raise HTTPException(503, "the identity provider is unreachable") from exc
        return identity


async def current_identity(request: Request) -> Identity:
    """The authenticated caller; 401 without a valid credential."""
    cached = getattr(request.state, "identity", None)
    if cached is not None:
        return cached
    identity = await request.app.state.nyla.auth.identify(request)
    if identity is None:
        raise HTTPException(
            401,
            "sign in: a valid API token or bearer JWT is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    request.state.identity = identity
    return identity


def require(role: Role) -> Callable[..., Awaitable[Identity]]:
    """A dependency that admits identities whose role includes ``role`` (403 otherwise). It
    reads the identity itself instead of depending on :func:`current_identity`: each level
    of dependencies FastAPI solves costs a request tens of microseconds."""

    async def dependency(request: Request) -> Identity:
        identity = await current_identity(request)
        if not identity.has(role):
            raise HTTPException(403, f"this needs the {role.value} role")
        return identity

    dependency.__name__ = f"need_{role.value}"
    dependency.nyla_role = role  # type: ignore[attr-defined]
    return dependency


need_user = require(Role.USER)
need_mandate_admin = require(Role.MANDATE_ADMIN)
need_sysadmin = require(Role.SYSADMIN)


def declared_role(route: Any) -> Role | None:
    """The role a route's dependencies require (``None`` when it declares none)."""
    dependant = getattr(route, "dependant", None)
    stack = list(dependant.dependencies) if dependant is not None else []
    while stack:
        dep = stack.pop()
        role = getattr(dep.call, "nyla_role", None)
        if role is not None:
            return role
        stack.extend(dep.dependencies)
    return None
