"""Runs of the caller's stored workflows (``/api/automation2/workflows/{id}/runs``): start a
run (it goes on without the connection), list a workflow's runs, read one with its nodes,
stream its events (SSE, resumable by ``Last-Event-ID``), cancel it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Header, HTTPException, Request
from pydantic import Field

from nyla.host import (
    RunOptions,
    WorkflowNotFoundError,
    WorkflowNotRunnableError,
    WorkflowRunNotFoundError,
)
from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.routes.catalog import run_context
from nyla_host.sse import InvalidEventId, last_event_id, sse_response
from nyla_host.state import host

router = APIRouter(prefix="/api/automation2/workflows", tags=["automation"])


def _runs(request: Request) -> Any:
    return host(request).kernel.workflow_runs


async def _visible(request: Request, workflow_id: str, run_id: str, identity: Identity) -> Any:
    """The caller's run of that workflow (404 for any other)."""
    try:
        run = await _runs(request).get(run_id, run_context(identity))
    except WorkflowRunNotFoundError as exc:
        raise HTTPException(404, exc.args[0]) from None
    if run.workflow_id != workflow_id:
        raise HTTPException(404, f"workflow {workflow_id} has no run {run_id}")
    return run


def _with_urls(run: Any) -> dict[str, Any]:
    base = f"/api/automation2/workflows/{run.workflow_id}/runs/{run.id}"
    return {**run.to_wire(), "eventsUrl": f"{base}/events", "cancelUrl": f"{base}/cancel"}


class StartRun(RunOptions):
    """``POST .../runs``: the run's options, and the caller's conversation its nodes'
    documents are bound to (``conversationId``)."""

    conversation_id: str | None = Field(default=None, min_length=1, max_length=128)


@router.post("/{workflow_id}/runs", status_code=202)
async def start_run(
    workflow_id: str,
    request: Request,
    body: StartRun | None = Body(default=None),
    identity: Identity = Depends(need_user),
) -> dict[str, Any]:
    """Start a run of the caller's workflow (optional body: ``maxAttempts``,
    ``nodeTimeoutS``, ``retryDelayS``, ``maxCostChf``, ``model``, and ``conversationId``:
    the caller's conversation the nodes' documents are bound to, numbered round 1, task 1
    and the node's place); it goes on when the client disconnects. 404 for a workflow that
    is not theirs, 403 for a conversation they may not change, 422 naming the problems of
    one that cannot run."""
    body = body or StartRun()
    options = RunOptions.model_validate(body.model_dump(exclude={"conversation_id"}))
    context = run_context(identity)
    if body.conversation_id is not None:
        context = context.model_copy(update={"workflow_id": body.conversation_id})
    try:
        run = await _runs(request).start(workflow_id, context, options)
    except WorkflowNotFoundError as exc:
        raise HTTPException(404, exc.args[0]) from None
    except PermissionError as exc:  # the conversation is not one the caller may change
        raise HTTPException(403, str(exc)) from None
    except WorkflowNotRunnableError as exc:
        problems = [p.to_wire() for p in exc.problems]
        raise HTTPException(422, {"message": str(exc), "problems": problems}) from None
    return _with_urls(run)


@router.get("/{workflow_id}/runs")
async def list_runs(
    workflow_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """The workflow's runs, newest first (404 for a workflow that is not the caller's)."""
    try:
        runs = await _runs(request).list_for(run_context(identity), workflow_id=workflow_id)
    except WorkflowNotFoundError as exc:
        raise HTTPException(404, exc.args[0]) from None
    return {"runs": [_with_urls(r) for r in runs]}


@router.get("/{workflow_id}/runs/{run_id}")
async def show_run(
    workflow_id: str, run_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """One run: status, cost, and each node's status, attempts, inputs, output or error."""
    return _with_urls(await _visible(request, workflow_id, run_id, identity))


@router.get("/{workflow_id}/runs/{run_id}/events")
async def run_events(
    workflow_id: str,
    run_id: str,
    request: Request,
    identity: Identity = Depends(need_user),
    last_event_id_header: str | None = Header(default=None, alias="Last-Event-ID"),
) -> Any:
    """The run's stored events as Server-Sent Events, live until it ends (whichever process
    runs it); resumes after ``Last-Event-ID`` (header, or ``lastEventId`` in the query)."""
    try:
        after = last_event_id(last_event_id_header, request.query_params.get("lastEventId"))
    except InvalidEventId as exc:
        raise HTTPException(400, str(exc)) from None
    await _visible(request, workflow_id, run_id, identity)
    runs, context = _runs(request), run_context(identity)
    keepalive = host(request).settings.ping_interval_s

    async def events() -> Any:
        async for event in runs.follow(run_id, context, after, keepalive=keepalive):
            yield None if event is None else event.to_wire()

    async def end() -> dict[str, Any]:
        run = await runs.get(run_id, context)
        return {"runId": run_id, "status": run.status, "lastEventId": run.last_event_id}

    return sse_response(events(), end)


@router.post("/{workflow_id}/runs/{run_id}/cancel")
async def cancel_run(
    workflow_id: str, run_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Cancel an open run: the node under way stops, the rest never runs (``cancelled``
    false when it had ended)."""
    await _visible(request, workflow_id, run_id, identity)
    cancelled = await _runs(request).cancel(run_id, run_context(identity))
    return {"runId": run_id, "cancelled": cancelled}
