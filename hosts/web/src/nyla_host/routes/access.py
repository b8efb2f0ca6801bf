"""Service access: what the caller may use, and the rules (``nyla access`` on the host).

A sysadmin changes any rule; a mandate admin the rules of their own mandate; everyone reads
what they themselves may use."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from pydantic import Field

from nyla.host import parse_permission, parse_role, service_permissions
from nyla.sdk import WireModel
from nyla_host.auth import need_mandate_admin, need_user
from nyla_host.identity import Identity
from nyla_host.service_access import subject
from nyla_host.state import host

router = APIRouter(prefix="/api/access", tags=["access"])


class AccessRule(WireModel):
    """``PUT /api/access/rules``: grant (``allowed: true``) or revoke a permission."""

    kind: Literal["user", "mandate", "role"]
    subject: str = Field(min_length=1, max_length=128)
    permission: str = Field(min_length=1, max_length=160)
    allowed: bool


def _permission(text: str) -> str:
    try:
        return parse_permission(text)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


def _may_change(identity: Identity, kind: str, name: str) -> None:
    """A mandate admin changes the rules of their own mandate only."""
    if identity.is_sysadmin:
        return
    if kind != "mandate" or name != identity.mandate_id:
        raise HTTPException(403, "a mandate admin changes only the rules of their own mandate")


def _subject_name(kind: str, name: str) -> str:
    if kind != "role":
        return name
    try:
        return parse_role(name)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


@router.get("/me")
async def my_access(request: Request, identity: Identity = Depends(need_user)) -> dict[str, Any]:
    """What the caller may use: each service and each installed connector."""
    kernel = host(request).kernel
    grants = await kernel.service_access.grants(subject(identity))
    permissions = service_permissions(kernel.plugins.connectors)
    return {
        "userId": identity.user_id,
        "permissions": [{"permission": p, "allowed": grants.allows(p)} for p in permissions],
    }


@router.get("/rules")
async def rules(
    request: Request, identity: Identity = Depends(need_mandate_admin)
) -> dict[str, Any]:
    """The stored rules (a mandate admin sees their mandate's)."""
    access = host(request).kernel.service_access
    if identity.is_sysadmin:
        found = await access.rules()
    else:
        found = await access.rules("mandate", str(identity.mandate_id))
    return {"rules": [r.to_wire() for r in found]}


@router.put("/rules")
async def set_rule(
    body: AccessRule, request: Request, identity: Identity = Depends(need_mandate_admin)
) -> dict[str, Any]:
    """Grant or revoke a permission for a user, a mandate or a role."""
    name = _subject_name(body.kind, body.subject)
    _may_change(identity, body.kind, name)
    access = host(request).kernel.service_access
    rule = await access.set(body.kind, name, _permission(body.permission), body.allowed)
    return rule.to_wire()


@router.delete("/rules")
async def clear_rule(
    request: Request,
    kind: Literal["user", "mandate", "role"] = Query(),
    name: str = Query(alias="subject", min_length=1, max_length=128),
    permission: str = Query(min_length=1, max_length=160),
    identity: Identity = Depends(need_mandate_admin),
) -> dict[str, Any]:
    """Remove a rule (the broader rule or the default decides again)."""
    name = _subject_name(kind, name)
    _may_change(identity, kind, name)
    removed = await host(request).kernel.service_access.clear(kind, name, _permission(permission))
    return {"removed": removed}
