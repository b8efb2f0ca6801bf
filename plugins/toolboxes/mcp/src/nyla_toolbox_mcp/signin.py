"""Signing a user in to (and out of) an OAuth MCP server, for the CLI and the host alike:
:func:`start` keeps the sign-in under way and answers the URL to send the person to;
:func:`complete` takes it back by its ``state`` (once, before it expires, for the user who
began it), exchanges the code and keeps the tokens sealed; :func:`sign_out` revokes them
where the authorization server offers it and forgets them."""

from __future__ import annotations

import logging
import time
from typing import Any, Literal

from nyla_toolbox_mcp.errors import OAuthError
from nyla_toolbox_mcp.grants import Pending
from nyla_toolbox_mcp.servers import McpServer, ServerStore

log = logging.getLogger(__name__)

Scope = Literal["user", "mandate"]


def _kind(exc: BaseException) -> str:
    """What is logged of a failure: its kind, and nyla's own reason (never a library's
    message, which may hold a request's content)."""
    from nyla_toolbox_mcp.errors import SignInRequired

    return str(exc) if isinstance(exc, OAuthError | SignInRequired) else type(exc).__name__


def owners(store: ServerStore, scope: Scope) -> ServerStore:
    """The store of a user's own servers, or of the mandates'."""
    return store.of(scope)


async def oauth_server(store: ServerStore, scope: Scope, owner: str, name: str) -> McpServer:
    """The OAuth server ``name`` of ``owner`` (``ValueError`` when there is none)."""
    server = await owners(store, scope).get(owner, name)
    if server is None:
        raise ValueError(f"no MCP server {name!r}")
    if server.oauth is None:
        raise ValueError(f"the MCP server {name!r} does not sign in with OAuth")
    return server


async def start(
    store: ServerStore,
    *,
    user_id: str,
    scope: Scope,
    owner: str,
    name: str,
    redirect_uri: str,
    relist: bool,
) -> tuple[str, Pending]:
    """Begin ``user_id``'s sign-in to the server ``name`` of ``owner``: the authorization
    URL and the sign-in kept until its callback."""
    from nyla_toolbox_mcp.oauth_flow import begin, http_client

    server = await oauth_server(store, scope, owner, name)
    who = {"user_id": user_id, "scope": scope, "owner": owner, "relist": relist}
    async with http_client() as http:
        url, pending = await begin(http, server, redirect_uri, who)
    await store.grants.add_pending(pending)
    return url, pending


async def complete(
    store: ServerStore,
    *,
    state: str,
    code: str,
    error: str = "",
    iss: str | None = None,
    user_id: str | None = None,
) -> Pending:
    """Finish the sign-in of ``state`` (refused when it is unknown, taken, expired, or
    began for another user than ``user_id``); the tokens are kept for the user who began
    it, and the server's tools are listed again when its owner signed in."""
    from nyla_toolbox_mcp.oauth_flow import finish, http_client

    pending = await store.grants.take_pending(state) if state else None
    if pending is None:
        raise OAuthError("this sign-in is unknown, used or expired: start it again")
    if user_id is not None and pending.user_id != user_id:
        raise OAuthError("this sign-in was begun by another user")
    if error:
        raise OAuthError(f"the authorization server did not sign you in: {error[:200]}")
    if not code:
        raise OAuthError("the authorization server sent no code")
    server = await owners(store, pending.scope).get(pending.owner, pending.server)
    if server is None or server.url != pending.server_url or server.oauth is None:
        raise OAuthError(f"the MCP server {pending.server!r} changed during the sign-in")
    async with http_client() as http:
        grant = await finish(http, pending, code, iss)
    await store.grants.put(pending.user_id, pending.server, grant)
    if pending.relist:
        from nyla_toolbox_mcp.cli import add_server

        try:
            await add_server(owners(store, pending.scope), pending.owner, server, pending.user_id)
        except Exception as exc:  # signed in all the same; the listing waits for the next
            log.warning("listing MCP server %s after a sign-in failed: %s", server.name, _kind(exc))
    return pending


async def sign_out(store: ServerStore, user_id: str, name: str) -> dict[str, bool]:
    """Forget ``user_id``'s sign-in to the server ``name``, revoking its tokens first where
    the authorization server offers it (a revocation that fails is logged, the tokens are
    forgotten all the same)."""
    from nyla_toolbox_mcp.oauth_flow import http_client, revoke

    grant = await store.grants.delete(user_id, name)
    if grant is None:
        return {"signedOut": False, "revoked": False}
    revoked = False
    try:
        async with http_client() as http:
            revoked = await revoke(http, grant)
    except Exception as exc:  # the tokens are forgotten whatever the server answers
        log.warning("revoking the sign-in to MCP server %s failed: %s", name, type(exc).__name__)
    return {"signedOut": True, "revoked": revoked}


async def sign_out_everyone(store: ServerStore, server: McpServer, user_id: str | None) -> int:
    """Sign out of ``server``, just removed: ``user_id`` (their own server), or every user
    (a mandate's server) whose sign-in is to its URL, unless they have an own server of
    that name; how many were signed out."""
    users = [user_id] if user_id else await store.grants.holders(server.name)
    done = 0
    for user in users:
        grant = await store.grants.get(user, server.name)
        own = await store.of("user").get(user, server.name) if user_id is None else None
        if grant is None or grant.server_url != server.url or own is not None:
            continue
        done += (await sign_out(store, user, server.name))["signedOut"]
    return done


async def state_of(store: ServerStore, user_id: str, server: McpServer) -> dict[str, Any] | None:
    """What a listing shows of ``user_id``'s sign-in to ``server`` (``None`` for a server
    without OAuth): signed in or not, and whether the token has expired (a call renews it
    when it can)."""
    if server.oauth is None:
        return None
    try:
        grant = await store.grants.get(user_id, server.name)
    except Exception:  # a key that no longer opens it: as good as signed out
        grant = None
    if grant is None or grant.server_url != server.url:
        return {"signedIn": False}
    return {
        "signedIn": True,
        "expired": grant.expired(margin=0),
        "refreshable": grant.refresh_token is not None,
        "signedInAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(grant.signed_in_at)),
    }
