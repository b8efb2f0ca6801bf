"""The plugins' settings sections (``nyla_settings_sections``; e.g. ``mcp``, the MCP
servers): ``GET /api/settings/sections`` names them; under
``/api/settings/sections/{section}/{scope}`` a caller lists, adds and removes entries of
their own (``user``) or of their mandate (``mandate``, for all its users).

Who may: every user reads and changes their own entries; every user of a mandate reads the
mandate's entries (they are what their runs use); only the mandate's admin (or a sysadmin)
adds or removes them. There is no way to name another user or mandate."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Body, Depends, HTTPException, Request

from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.state import host

router = APIRouter(prefix="/api/settings/sections", tags=["settings"])

Scope = Literal["user", "mandate"]


def section_of(request: Request, section_id: str) -> Any:
    """The section ``section_id`` (``None`` when no plugin has it), bound to the kernel's
    database when it keeps its entries there (``bind(db)``, as a feature's data provider)."""
    kernel = host(request).kernel
    section = kernel.plugins.settings_sections.get(section_id)
    bind = getattr(section, "bind", None)
    if bind is not None:
        bind(kernel.db)
    return section


def _section(request: Request, section_id: str) -> Any:
    section = section_of(request, section_id)
    if section is None:
        raise HTTPException(404, f"no settings section {section_id!r}")
    return section


def _owner(identity: Identity, scope: Scope, *, change: bool) -> str:
    """Whose entries the caller reaches in ``scope`` (403 when they may not)."""
    if scope == "user":
        return identity.user_id
    if not identity.mandate_id:
        raise HTTPException(403, "you belong to no mandate")
    if change and not identity.is_mandate_admin:
        raise HTTPException(403, "only the mandate's admin changes the mandate's settings")
    return identity.mandate_id


@router.get("")
async def list_sections(
    request: Request, identity: Identity = Depends(need_user)
) -> list[dict[str, str]]:
    """The settings sections the plugins contribute."""
    sections = host(request).kernel.plugins.settings_sections.values()
    return [{"id": s.id, "label": s.label} for s in sections]


@router.get("/{section_id}/{scope}")
async def list_entries(
    section_id: str, scope: Scope, request: Request, identity: Identity = Depends(need_user)
) -> list[dict[str, Any]]:
    """The caller's (or their mandate's) entries of the section."""
    owner = _owner(identity, scope, change=False)
    return list(await _section(request, section_id).entries(scope, owner))


@router.post("/{section_id}/{scope}", status_code=201)
async def add_entry(
    section_id: str,
    scope: Scope,
    request: Request,
    body: dict[str, Any] = Body(...),
    identity: Identity = Depends(need_user),
) -> dict[str, Any]:
    """Add (or replace) an entry; 400 with the reason when it is refused (nothing stored)."""
    owner = _owner(identity, scope, change=True)
    section = _section(request, section_id)
    try:
        return dict(await section.add(scope, owner, body))
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


@router.delete("/{section_id}/{scope}/{name}")
async def remove_entry(
    section_id: str,
    scope: Scope,
    name: str,
    request: Request,
    identity: Identity = Depends(need_user),
) -> dict[str, str]:
    """Remove an entry; 404 when there is none."""
    owner = _owner(identity, scope, change=True)
    if not await _section(request, section_id).remove(scope, owner, name):
        raise HTTPException(404, f"no entry {name!r}")
    return {"removed": name}
