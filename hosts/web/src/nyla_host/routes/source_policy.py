"""``neutralize`` and ``scope`` of a data-source tree element, editable and revertible as
🧠 is: ``PATCH /api/datasources/{id}/policy`` with either field (``null`` = inherit again).
Files indexed under a value that no longer applies are purged at once and, where the element
is indexed, a sync is started that indexes them again under the new policy."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Request

from nyla import NotFoundError, PermissionDeniedError
from nyla.sdk import WireModel
from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.routes.datasources import current_source, visible_source
from nyla_host.state import host

router = APIRouter(prefix="/api/datasources", tags=["datasources"])


class PolicyPatch(WireModel):
    """The fields to change; a field left out stays as it is, ``null`` inherits."""

    neutralize: bool | None = None
    scope: Literal["personal", "mandate"] | None = None


@router.patch("/{data_source_id}/policy")
async def source_policy(
    data_source_id: str,
    body: PolicyPatch,
    request: Request,
    identity: Identity = Depends(need_user),
) -> dict[str, Any]:
    """Set or clear ``neutralize`` / ``scope``; owner-only (a sysadmin acts for the owner).
    Returns the element with its explicit and effective values, what was purged and the id
    of the sync that re-indexes it (``null`` when nothing needs it)."""
    fields = body.model_fields_set & {"neutralize", "scope"}
    if not fields:
        raise HTTPException(400, "give neutralize and/or scope (null to inherit)")
    source = await visible_source(request, data_source_id, identity)
    if source.user_id != identity.user_id and not identity.is_sysadmin:
        raise HTTPException(403, "only the owner of a data source may change its policy")
    kernel = host(request).kernel
    purged = {"files": 0, "chunks": 0}
    try:
        for field in sorted(fields):
            result = await kernel.knowledge.governance.set_source_policy(
                data_source_id, field, getattr(body, field), actor=source.user_id
            )
            purged["files"] += result.files
            purged["chunks"] += result.chunks
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    except PermissionDeniedError as exc:
        raise HTTPException(403, str(exc)) from None
    except NotFoundError:
        raise HTTPException(404, f"no data source {data_source_id}") from None
    source = await current_source(kernel.db, data_source_id)
    job_id = None
    if purged["files"] and source.rag_index_effective:
        job_id = await kernel.sync.start(data_source_id, user_id=source.user_id)
    return {"dataSource": source.to_wire(), "purge": purged, "jobId": job_id}
