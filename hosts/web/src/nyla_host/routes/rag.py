"""The RAG inventory: the caller's, the mandate's (mandate admin), the platform's
(sysadmin) and the caller's running jobs. Each inventory lists the data sources whose last
sync stopped at a limit (``partial``: the page's banner with its "adjust limit" button)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from nyla import JobStore, get_data_source
from nyla_host.auth import need_mandate_admin, need_sysadmin, need_user
from nyla_host.identity import Identity
from nyla_host.state import host
from nyla_host.timezone import local_iso

router = APIRouter(prefix="/api/rag/inventory", tags=["rag"])


def _job(job: Any) -> dict[str, Any]:
    return {
        "id": job.id,
        "kind": job.kind,
        "status": job.status,
        "progress": job.progress,
        "total": job.total,
        "message": job.message,
        "connectionId": job.connection_id,
        "dataSourceId": job.data_source_id,
        "startedAt": local_iso(job.started_at),
        "finishedAt": local_iso(job.finished_at),
        "error": job.error,
    }


async def _partial(request: Request, **who: Any) -> list[dict[str, Any]]:
    """The newest finished sync of each data source, when it stopped at a limit."""
    seen: set[str] = set()
    partial = []
    for job in await JobStore(host(request).kernel.db).finished(**who, limit=200):
        if not job.data_source_id or job.data_source_id in seen:
            continue
        seen.add(job.data_source_id)
        for result in (job.details or {}).get("results", []):
            if result.get("stoppedAtLimit"):
                source = await get_data_source(host(request).kernel.db, job.data_source_id)
                partial.append(
                    {
                        "dataSourceId": job.data_source_id,
                        "label": (source.label or source.path) if source else None,
                        "path": source.path if source else None,
                        "connectionId": job.connection_id,
                        "itemsIndexed": result.get("itemsIndexed", 0),
                        "bytesIndexed": result.get("bytesIndexed", 0),
                        "finishedAt": local_iso(job.finished_at),
                    }
                )
    return partial


async def _inventory(request: Request, level: str, subject: str | None, **who: Any) -> dict:
    inventory = await host(request).kernel.knowledge.inventory(level, subject)
    data = inventory.to_wire()
    data["totals"] = inventory.totals.to_wire()
    data["partial"] = await _partial(request, **who)
    return data


@router.get("/me")
async def inventory_me(request: Request, identity: Identity = Depends(need_user)) -> dict:
    """What is indexed of the caller's own data."""
    return await _inventory(request, "user", identity.user_id, user_id=identity.user_id)


@router.get("/mandate")
async def inventory_mandate(
    request: Request, identity: Identity = Depends(need_mandate_admin)
) -> dict:
    """What is indexed in the caller's mandate (mandate admin)."""
    mandate = identity.mandate_id
    return await _inventory(request, "mandate", mandate, mandate_id=mandate)


@router.get("/platform")
async def inventory_platform(request: Request, identity: Identity = Depends(need_sysadmin)) -> dict:
    """What is indexed platform-wide (sysadmin)."""
    return await _inventory(request, "platform", None)


@router.get("/jobs")
async def inventory_jobs(request: Request, identity: Identity = Depends(need_user)) -> dict:
    """The caller's running RAG jobs (the floating badge polls this)."""
    jobs = await JobStore(host(request).kernel.db).running(user_id=identity.user_id)
    return {"jobs": [_job(j) for j in jobs]}
