"""Signing the host's user in to a settings entry that needs it (the MCP servers that sign
in with OAuth): the section contributes the sign-in (:class:`SignInSection`, the methods the
``mcp`` section has), the host begins it for the caller, takes the authorization server's
redirect back on a public callback and stores nothing itself.

- ``GET  /api/settings/sections/{section}/{scope}/sign-in``: the caller's sign-in to each
  entry of their own (``user``) or their mandate's (``mandate``);
- ``POST /api/settings/sections/{section}/{scope}/{name}/sign-in``: the URL to send the
  browser to (every user signs in as themselves, to a mandate's entry too; only the entry's
  owner — the user, or the mandate's admin — has its tools listed again);
- ``DELETE`` of the same: signed out, the tokens revoked where the server offers it;
- ``GET  /api/settings/sections/{section}/sign-in/callback``: public (the authorization
  server sends the browser there); the one-time, expiring ``state`` ties it to the user who
  began it, and the browser goes back to the page (303) with the outcome."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import RedirectResponse

from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.routes.settings_sections import section_of

router = APIRouter(prefix="/api/settings/sections", tags=["settings"])

Scope = Literal["user", "mandate"]


@runtime_checkable
class SignInSection(Protocol):
    """A settings section whose entries a user signs in to (see the ``mcp`` section)."""

    async def sign_in_states(
        self, scope: Scope, owner: str, user_id: str
    ) -> dict[str, dict[str, Any]]: ...

    async def begin_sign_in(
        self, scope: Scope, owner: str, name: str, *, user_id: str, redirect_uri: str, relist: bool
    ) -> str: ...

    async def finish_sign_in(
        self, *, state: str, code: str, error: str = "", iss: str | None = None
    ) -> dict[str, str]: ...

    async def sign_out(self, user_id: str, name: str) -> dict[str, bool]: ...


def _section(request: Request, section_id: str) -> SignInSection:
    section = section_of(request, section_id)
    if not isinstance(section, SignInSection):
        raise HTTPException(404, f"no settings section {section_id!r} with sign-in")
    return section


def _owner(identity: Identity, scope: Scope) -> str:
    if scope == "user":
        return identity.user_id
    if not identity.mandate_id:
        raise HTTPException(403, "you belong to no mandate")
    return identity.mandate_id


@router.get("/{section_id}/{scope}/sign-in")
async def sign_in_states(
    section_id: str, scope: Scope, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, dict[str, Any]]:
    """The caller's sign-in to each entry that needs one, by entry name."""
    owner = _owner(identity, scope)
    return dict(await _section(request, section_id).sign_in_states(scope, owner, identity.user_id))


@router.post("/{section_id}/{scope}/{name}/sign-in")
async def begin_sign_in(
    section_id: str,
    scope: Scope,
    name: str,
    request: Request,
    identity: Identity = Depends(need_user),
) -> dict[str, str]:
    """Begin the caller's sign-in to the entry ``name``: the URL to send the browser to."""
    owner = _owner(identity, scope)
    section = _section(request, section_id)
    callback = str(request.url_for("settings_sign_in_callback", section_id=section_id))
    try:
        url = await section.begin_sign_in(
            scope,
            owner,
            name,
            user_id=identity.user_id,
            redirect_uri=callback,
            relist=scope == "user" or identity.is_mandate_admin,
        )
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    return {"authorizationUrl": url}


@router.delete("/{section_id}/{scope}/{name}/sign-in")
async def sign_out(
    section_id: str,
    scope: Scope,
    name: str,
    request: Request,
    identity: Identity = Depends(need_user),
) -> dict[str, Any]:
    """Sign the caller out of the entry ``name``; 404 when they were not signed in."""
    _owner(identity, scope)
    done = await _section(request, section_id).sign_out(identity.user_id, name)
    if not done.get("signedOut"):
        raise HTTPException(404, f"you are not signed in to {name!r}")
    return {"name": name, **done}


@router.get("/{section_id}/sign-in/callback", name="settings_sign_in_callback")
async def sign_in_callback(
    section_id: str,
    request: Request,
    state: str = Query(default="", max_length=256),
    code: str = Query(default="", max_length=8192),
    iss: str | None = Query(default=None, max_length=2048),
    error: str = Query(default="", max_length=200),
    error_description: str = Query(default="", max_length=500),
) -> RedirectResponse:
    """Where the authorization server sends the browser back (public; the one-time
    ``state`` proves who began it): the tokens are stored for that user, and the browser
    goes back to the page's tab of the section (303) with the outcome."""
    section = section_of(request, section_id)
    if not isinstance(section, SignInSection):
        return RedirectResponse(f"/#mcp?{urlencode({'signInError': 'no such section'})}", 303)
    try:
        done = await section.finish_sign_in(
            state=state,
            code=code,
            iss=iss,
            error=" ".join(filter(None, [error, error_description])),
        )
    except ValueError as exc:
        return RedirectResponse(f"/#{section_id}?{urlencode({'signInError': str(exc)})}", 303)
    return RedirectResponse(f"/#{section_id}?{urlencode({'signedIn': done['name']})}", 303)
