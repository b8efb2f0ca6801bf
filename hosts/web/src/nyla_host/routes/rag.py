"""The RAG inventory: the caller's, the mandate's (mandate admin), the platform's
(sysadmin) and the caller's running jobs. Each inventory lists the caller's data sources whose last sync
stopped at a limit (``partial``: the page's banner with its "adjust limit" button)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from nyla.host import JobStore
from nyla_host.auth import need_mandate_admin, need_sysadmin, need_user
from nyla_host.identity import Identity
from nyla_host.state import host
from nyla_host.timezone import local_iso

router = APIRouter(prefix="/api/rag/inventory", tags=["rag"])


def _job(job: Any) -> dict[str, Any]:
    return {
        "id": job.id,
        "kind": job.kind,
        "status": job.shown_status,
        "progress": job.progress,
        "total": job.total,
        "message": job.message,
        "connectionId": job.connection_id,
        "dataSourceId": job.data_source_id,
        "startedAt": local_iso(job.started_at),
        "finishedAt": local_iso(job.finished_at),
        "error": job.error,
    }


async def _partial(request: Request, user_id: str | None) -> list[dict[str, Any]]:
    """The caller's data sources whose last sync stopped at a limit (the sync state)."""
    if user_id is None:
        return []
    rows = await host(request).kernel.sync.status(user_id=user_id)
    return [
        {
            "dataSourceId": row["dataSourceId"],
            "connectionId": row["connectionId"],
            "label": row["label"] or row["path"],
            "path": row["path"],
            "stoppedAtLimit": row["stoppedAtLimit"],
            "itemsIndexed": (row["lastResult"] or {}).get("itemsIndexed", 0),
            "bytesIndexed": (row["lastResult"] or {}).get("bytesIndexed", 0),
        }
        for row in rows
        if row["stoppedAtLimit"]
    ]


async def _inventory(
    request: Request, level: str, subject: str | None, identity: Identity
) -> dict[str, Any]:
    inventory = await host(request).kernel.knowledge.inventory(level, subject)
    data = inventory.to_wire()
    data["totals"] = inventory.totals.to_wire()
    data["partial"] = await _partial(request, identity.user_id)
    return data


@router.get("/me")
async def inventory_me(request: Request, identity: Identity = Depends(need_user)) -> dict:
    """What is indexed of the caller's own data."""
    return await _inventory(request, "user", identity.user_id, identity)


@router.get("/mandate")
async def inventory_mandate(
    request: Request, identity: Identity = Depends(need_mandate_admin)
) -> dict:
    """What is indexed in the caller's mandate (mandate admin)."""
    return await _inventory(request, "mandate", identity.mandate_id, identity)


@router.get("/platform")
async def inventory_platform(request: Request, identity: Identity = Depends(need_sysadmin)) -> dict:
    """What is indexed platform-wide (sysadmin)."""
    return await _inventory(request, "platform", None, identity)


@router.get("/jobs")
async def inventory_jobs(request: Request, identity: Identity = Depends(need_user)) -> dict:
    """The caller's running RAG jobs (the floating badge polls this)."""
    jobs = await JobStore(host(request).kernel.db).running(user_id=identity.user_id)
    return {"jobs": [_job(j) for j in jobs]}
