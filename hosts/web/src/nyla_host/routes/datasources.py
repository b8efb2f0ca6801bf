"""Data sources (tree elements of a connection): list, add, the 🧠 RAG toggle, sync now and
stop, settings (``ragLimits`` only) and the cost estimate — the seeds' paths and semantics."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Body, Depends, HTTPException, Request
from pydantic import Field
from pydantic.alias_generators import to_camel

from nyla import SettingsValidationError
from nyla.host import DataSourceView, JobStore, get_data_source, list_data_sources
from nyla.sdk import WireModel
from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.routes.connections import owned_connection
from nyla_host.service_access import KNOWLEDGE, need_service
from nyla_host.state import host

router = APIRouter(prefix="/api/datasources", tags=["datasources"])


class NewDataSource(WireModel):
    """``POST /api/datasources``: a tree element of one of the caller's connections."""

    connection_id: str
    path: str = Field(min_length=1, max_length=2000)
    label: str = Field(default="", max_length=200)
    scope: str | None = None


class RagToggle(WireModel):
    """``PATCH /api/datasources/{id}/rag-index``: ``null`` clears it (inherit)."""

    enabled: bool | None


def camel_limits(limits: dict[str, int]) -> dict[str, int]:
    """Limits with the wire's camelCase keys (``maxBytes``; bytes stay bytes)."""
    return {to_camel(key): value for key, value in limits.items()}


def administers(identity: Identity, source: Any) -> bool:
    """The caller owns ``source``, or administers its mandate and it is mandate-scoped."""
    if source.user_id == identity.user_id or identity.is_sysadmin:
        return True
    return (
        identity.is_mandate_admin
        and source.scope == "mandate"
        and source.mandate_id is not None
        and source.mandate_id == identity.mandate_id
    )


async def current_source(db: Any, data_source_id: str) -> DataSourceView:
    """The data source as stored now (404 when it went away meanwhile, e.g. its connection
    was removed by a concurrent request)."""
    source = await get_data_source(db, data_source_id)
    if source is None:
        raise HTTPException(404, f"no data source {data_source_id}")
    return source


async def visible_source(request: Request, data_source_id: str, identity: Identity) -> Any:
    """A data source the caller owns or administers (404 otherwise)."""
    source = await get_data_source(host(request).kernel.db, data_source_id)
    if source is None or not administers(identity, source):
        raise HTTPException(404, f"no data source {data_source_id}")
    return source


@router.get("")
async def data_sources(request: Request, identity: Identity = Depends(need_user)) -> dict[str, Any]:
    """Every connection of the caller with its data-source tree."""
    kernel = host(request).kernel
    db = kernel.db
    out = []
    for connection in await kernel.connections.list(identity.user_id):
        sources = await list_data_sources(db, connection.id)
        out.append({**connection.to_wire(), "dataSources": [s.to_wire() for s in sources]})
    return {"connections": out}


@router.post("", status_code=201)
async def add_data_source(
    body: NewDataSource, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Add a tree element to one of the caller's connections (indexing inherited)."""
    await owned_connection(request, body.connection_id, identity)
    if body.scope not in (None, "personal", "mandate"):
        raise HTTPException(400, "scope is personal or mandate")
    data_source_id = uuid.uuid4().hex
    await host(request).kernel.knowledge.governance.add_data_source(
        data_source_id,
        body.connection_id,
        body.path,
        user_id=identity.user_id,
        mandate_id=identity.mandate_id,
        scope=body.scope,
        label=body.label,
    )
    return (await current_source(host(request).kernel.db, data_source_id)).to_wire()


@router.get("/{data_source_id}")
async def data_source(
    data_source_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """One data source with its effective 🧠, its limits and the range each may be set to,
    and its ``sync``: the running job with its progress, the last result, how many files
    are indexed, when it last synced and when the schedule syncs it next."""
    source = await visible_source(request, data_source_id, identity)
    kernel = host(request).kernel
    limits = await kernel.knowledge.sources.limits(data_source_id)
    return {
        **source.to_wire(),
        "ragLimits": camel_limits(limits.values),
        "ragLimitRanges": {key: bounds.to_wire() for key, bounds in limits.ranges.items()},
        "sync": await kernel.sync.source_status(data_source_id),
    }


@router.post("/{data_source_id}/sync", status_code=202)
async def sync_now(
    data_source_id: str, request: Request, identity: Identity = Depends(need_service(KNOWLEDGE))
) -> dict[str, Any]:
    """Sync now, within the limits as stored: ``{jobId}`` of the job started, or of the one
    already queued or running. 409 while indexing is off for it (or its connection's
    consent); 403 without ``service.knowledge`` (a sync fills the knowledge store)."""
    source = await visible_source(request, data_source_id, identity)
    kernel = host(request).kernel
    if not source.rag_index_effective:
        raise HTTPException(
            409, "indexing is off for this data source or its connection: switch 🧠 on first"
        )
    status = await kernel.sync.source_status(data_source_id)
    if status["running"] is not None:
        return {"jobId": status["running"]["jobId"]}
    return {"jobId": await kernel.sync.start(data_source_id, user_id=source.user_id)}


@router.post("/{data_source_id}/stop")
async def stop(
    data_source_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Cancel the queued and running syncs of the data source (each stops at its next
    item; what it committed stays indexed): ``{cancelledJobs}``."""
    source = await visible_source(request, data_source_id, identity)
    cancelled = await host(request).kernel.sync.stop(
        user_id=source.user_id, data_source_id=data_source_id
    )
    return {"cancelledJobs": cancelled}


@router.patch("/{data_source_id}/rag-index")
async def rag_index(
    data_source_id: str, body: RagToggle, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Toggle ``ragIndexEnabled``: on starts a first small sync job (the kernel's sync
    service), off purges at once and stops the source's running syncs."""
    source = await visible_source(request, data_source_id, identity)
    kernel = host(request).kernel
    owner = source.user_id
    connection = await owned_connection(request, source.connection_id, identity)
    if body.enabled is None or (body.enabled and not connection.knowledge_ingestion_enabled):
        # back to inherited, or switched on without the connection's consent: no sync now
        purge = await kernel.knowledge.governance.set_rag_index_enabled(
            data_source_id, body.enabled, actor=owner
        )
    else:
        purge = await kernel.sync.set_indexing(data_source_id, body.enabled, user_id=owner)
    source = await current_source(kernel.db, data_source_id)
    running = [
        job.id
        for job in await JobStore(kernel.db).running(user_id=owner)
        if job.data_source_id == data_source_id
    ]
    if body.enabled is None and not source.rag_index_effective:
        await kernel.sync.stop(user_id=owner, data_source_id=data_source_id)
        running = []
    elif body.enabled is None and not running and connection.knowledge_ingestion_enabled:
        running = [await kernel.sync.start(data_source_id, user_id=owner)]
    return {
        "dataSource": source.to_wire(),
        "purge": purge.to_wire(),
        "jobId": running[-1] if running and source.rag_index_effective else None,
    }


@router.patch("/{data_source_id}/settings")
async def settings(
    data_source_id: str,
    request: Request,
    patch: dict[str, Any] = Body(...),
    identity: Identity = Depends(need_user),
) -> dict[str, Any]:
    """Partial update of the settings: only ``ragLimits``, each a whole number in its range
    (``ragLimitRanges`` of the data source; anything else → 400 naming the key); owner-only,
    a mandate admin also for mandate-scoped sources; audited."""
    source = await visible_source(request, data_source_id, identity)
    knowledge = host(request).kernel.knowledge
    try:
        updated = await knowledge.sources.update_settings(
            data_source_id,
            patch,
            actor=source.user_id if identity.is_sysadmin else identity.user_id,
            is_mandate_admin=administers(identity, source) and source.user_id != identity.user_id,
        )
    except SettingsValidationError as exc:
        raise HTTPException(400, str(exc)) from exc
    return {"settings": updated.settings, "ragLimits": camel_limits(updated.limits.values)}


@router.get("/{data_source_id}/cost-estimate")
async def cost_estimate(
    data_source_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Indicative CHF for a full sync, priced by the embedding model the store will use and
    sized by what the source holds (what its syncs indexed, else a listing of it now cut after
    a few seconds, else its limits; the limits cap it):
    ``{estimatedTokens, estimatedChf, basis: {kind, limits, assumptions, notes}, sourceId}``."""
    await visible_source(request, data_source_id, identity)
    kernel = host(request).kernel
    estimate = await kernel.knowledge.sources.estimate_cost(data_source_id)
    if estimate.basis.assumptions["sizedBy"] == "limits":  # no sync read it all: list it now
        listed = await kernel.sync.survey(data_source_id)
        estimate = await kernel.knowledge.sources.estimate_cost(data_source_id, listed=listed)
    return _estimate_wire(estimate)


def _estimate_wire(estimate: Any) -> dict[str, Any]:
    wire: dict[str, Any] = estimate.to_wire()
    wire["basis"]["limits"] = camel_limits(wire["basis"]["limits"])
    return wire
