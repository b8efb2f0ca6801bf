"""Governance for mandate admins: the billing report, spending limits and credit, and the
model access entry of a mandate (``/api/billing/...``, ``/api/model-access``).

A mandate admin sees and sets its own mandate (its report, its monthly limit, its model
access); a sysadmin any mandate. Only a sysadmin adds credit, blocks spending, switches a
mandate to prepaid, or sets a user's own entry (a user's limit and model access hold in every
mandate the user works in, so no one mandate's admin sets them).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Request

from nyla.sdk import WireModel
from nyla_host.auth import need_mandate_admin
from nyla_host.identity import Identity
from nyla_host.state import host

router = APIRouter(tags=["billing"])


def _subject(
    identity: Identity, mandate: str | None, user_id: str | None
) -> tuple[Literal["user", "mandate"], str]:
    """The entry a change is for: a user's (a sysadmin's to set) or the mandate's."""
    if user_id:
        if not identity.is_sysadmin:
            raise HTTPException(403, "only a sysadmin sets a user's own entry")
        return "user", user_id
    if mandate is None:
        raise HTTPException(400, "name the mandateId (or userId) the entry is for")
    return "mandate", mandate


def _mandate(identity: Identity, mandate_id: str | None) -> str | None:
    """The mandate a request may read or change: a mandate admin's own (403 for another),
    any for a sysadmin (``None``: every mandate)."""
    if identity.is_sysadmin:
        return mandate_id
    if identity.mandate_id is None:
        raise HTTPException(403, "a mandate admin without a mandate administers nothing")
    if mandate_id is not None and mandate_id != identity.mandate_id:
        raise HTTPException(403, "you administer only your own mandate")
    return identity.mandate_id


@router.get("/api/billing/report")
async def billing_report(
    request: Request,
    month: str | None = None,
    mandate_id: str | None = None,
    user_id: str | None = None,
    identity: Identity = Depends(need_mandate_admin),
) -> dict[str, Any]:
    """The month's spending (``month`` ``YYYY-MM``, default this one) of the caller's mandate
    (a sysadmin: ``mandateId``, or every mandate), per user and operation, with storage,
    limits and credit. Query parameters: ``month``, ``mandateId``/``mandate_id``,
    ``userId``/``user_id``."""
    query = request.query_params
    mandate = _mandate(identity, query.get("mandateId", mandate_id))
    user = query.get("userId", user_id)
    try:
        report = await host(request).kernel.billing.report(month, mandate_id=mandate, user_id=user)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    return report.to_wire()


class LimitsBody(WireModel):
    """A policy change: only the fields sent change (``monthlyLimitChf`` ``null``: no limit).
    ``userId`` names a user instead of the mandate (a sysadmin's)."""

    mandate_id: str | None = None
    user_id: str | None = None
    monthly_limit_chf: float | None = None
    spending_allowed: bool | None = None
    prepaid: bool | None = None


@router.get("/api/billing/limits")
async def billing_limits(
    request: Request, identity: Identity = Depends(need_mandate_admin)
) -> dict[str, Any]:
    """The spending policies: the caller's mandate's (a sysadmin: every one)."""
    billing = host(request).kernel.billing
    mandate = _mandate(identity, request.query_params.get("mandateId"))
    policies = await billing.policies("mandate", mandate) if mandate else await billing.policies()
    return {"policies": [p.to_wire() for p in policies]}


@router.put("/api/billing/limits")
async def set_billing_limits(
    body: LimitsBody, request: Request, identity: Identity = Depends(need_mandate_admin)
) -> dict[str, Any]:
    """Set the monthly limit of the caller's mandate; blocking spending, prepaid mode and a
    user's limit are a sysadmin's."""
    changes = {
        f: getattr(body, f)
        for f in ("monthly_limit_chf", "spending_allowed", "prepaid")
        if f in body.model_fields_set
    }
    if not changes:
        raise HTTPException(400, "send monthlyLimitChf, spendingAllowed or prepaid")
    if not identity.is_sysadmin and set(changes) - {"monthly_limit_chf"}:
        raise HTTPException(403, "only a sysadmin blocks spending or sets prepaid mode")
    kind, subject = _subject(identity, _mandate(identity, body.mandate_id), body.user_id)
    try:
        policy = await host(request).kernel.billing.update_policy(kind, subject, **changes)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    return policy.to_wire()


class CreditBody(WireModel):
    """Credit to add to a mandate (negative: correct an earlier amount)."""

    mandate_id: str
    amount_chf: float
    note: str = ""


@router.post("/api/billing/credit")
async def add_billing_credit(
    body: CreditBody, request: Request, identity: Identity = Depends(need_mandate_admin)
) -> dict[str, Any]:
    """Add credit to a mandate (a sysadmin's); answers the new balance."""
    if not identity.is_sysadmin:
        raise HTTPException(403, "only a sysadmin adds credit")
    try:
        balance = await host(request).kernel.billing.add_credit(
            body.mandate_id, body.amount_chf, note=body.note, added_by=identity.user_id
        )
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    return {"mandateId": body.mandate_id, "balanceChf": balance}


class AccessBody(WireModel):
    """The models and providers a mandate (or a user of it) may use; a list left out stays,
    an empty one allows every model / provider."""

    mandate_id: str | None = None
    user_id: str | None = None
    models: list[str] | None = None
    providers: list[str] | None = None


@router.get("/api/model-access")
async def model_access(
    request: Request, identity: Identity = Depends(need_mandate_admin)
) -> dict[str, Any]:
    """The model access entries: the caller's mandate's (a sysadmin: every entry)."""
    mandate = _mandate(identity, request.query_params.get("mandateId"))
    entries = await host(request).kernel.model_access.entries()
    if mandate is not None:
        entries = [e for e in entries if (e.kind, e.subject) == ("mandate", mandate)]
    return {"entries": [e.to_wire() for e in entries]}


@router.put("/api/model-access")
async def set_model_access(
    body: AccessBody, request: Request, identity: Identity = Depends(need_mandate_admin)
) -> dict[str, Any]:
    """Replace the model and/or provider list of the caller's mandate (a sysadmin: also a
    user's); ids are checked against the installed models. Every AI call of that mandate or
    user follows it, sub-agents, embeddings and summaries included."""
    kernel = host(request).kernel
    specs = kernel.plugins.models()
    unknown = [m for m in body.models or [] if m not in {s.id for s in specs}]
    unknown += [p for p in body.providers or [] if p not in {s.provider for s in specs}]
    if unknown:
        raise HTTPException(400, f"unknown model or provider: {', '.join(unknown)}")
    if body.models is None and body.providers is None:
        raise HTTPException(400, "send models and/or providers")
    kind, subject = _subject(identity, _mandate(identity, body.mandate_id), body.user_id)
    if body.models is not None:
        await kernel.model_access.set(kind, subject, body.models)
    if body.providers is not None:
        await kernel.model_access.set_providers(kind, subject, body.providers)
    found = [
        e for e in await kernel.model_access.entries() if (e.kind, e.subject) == (kind, subject)
    ]
    return {
        "kind": kind,
        "subject": subject,
        "models": found[0].models if found else [],
        "providers": found[0].providers if found else [],
    }
