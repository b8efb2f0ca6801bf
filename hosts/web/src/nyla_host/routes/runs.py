"""Agent runs: start (detached from the connection), list, show, stream (SSE), cancel, resume
an interrupted one."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, Header, HTTPException, Request
from pydantic import Field

from nyla import AgentConfig
from nyla.sdk import WireModel
from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.model_choice import model_choice
from nyla_host.routes.catalog import run_context
from nyla_host.routes.files import callers_files
from nyla_host.runs import RunNotFound, RunNotResumable, UnfinishedWrites, run_dict
from nyla_host.sse import InvalidEventId, last_event_id, sse_response
from nyla_host.state import host
from nyla_host.timezone import local_iso, request_timezone

router = APIRouter(prefix="/api/runs", tags=["runs"])


class RunRequest(WireModel):
    """``POST /api/runs``: the prompt, the run's limits, the conversation it continues (a
    new one, titled from the prompt, without) and the caller's files attached to it.
    ``workflowId`` is the older name of a conversation id (a new one is made with it)."""

    prompt: str = Field(min_length=1, max_length=100_000)
    model: str | None = Field(default=None, max_length=255)
    max_rounds: int = Field(default=10, ge=1, le=100)
    max_cost_chf: float | None = Field(default=None, ge=0)
    toolboxes: list[str] = Field(default_factory=list)
    conversation_id: str | None = Field(default=None, min_length=1, max_length=128)
    workflow_id: str | None = Field(default=None, min_length=1, max_length=128)
    file_ids: list[str] = Field(default_factory=list, max_length=50)


async def _visible(request: Request, run_id: str, identity: Identity) -> Any:
    try:
        return await host(request).runs.get(run_id, identity)
    except RunNotFound:
        raise HTTPException(404, f"no run {run_id}") from None


def _with_local_times(row: Any, zone: ZoneInfo | None = None) -> dict[str, Any]:
    """The run's wire form with its start in the request's timezone (``zone``, when the
    caller has it at hand: a list asks once, not per run)."""
    data = run_dict(row)
    if zone is None:
        data["startedAtLocal"] = local_iso(row.started_at)
    else:
        started = row.started_at
        data["startedAtLocal"] = started.astimezone(zone).isoformat() if started else None
    return data


@router.post("", status_code=202)
async def start_run(
    body: RunRequest, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Start a run in a conversation; it goes on when the client disconnects. Stream it from
    ``eventsUrl``. 403 for a model the caller may not use or without ``service.agent``
    (nothing stored), 404 for a conversation or file that is not theirs; 503 with
    ``Retry-After`` when too many starts are waiting already (:mod:`nyla_host.start_gate`)."""
    state = host(request)
    async with state.runs.gate.turn():
        return await _start(state, request, body, identity)


async def _start(
    state: Any, request: Request, body: RunRequest, identity: Identity
) -> dict[str, Any]:
    choice = await model_choice(state, identity)
    model = choice.for_run(body.model or None)
    # the caller's account, read once: the service grants (403 without service.agent,
    # before anything is stored) and the model allow-list the choice above already read
    context = await state.runs.context(
        identity, timezone=request_timezone(), allowed_models=choice.allowed, models_read=True
    )
    files = await callers_files(request, identity, body.file_ids)
    conversation_id, new = await _conversation(request, body, identity)
    config = AgentConfig(
        model=model,
        max_rounds=body.max_rounds,
        max_cost_chf=body.max_cost_chf,
        initial_toolboxes=body.toolboxes,
    )
    row = await state.runs.start(
        body.prompt,
        identity,
        config=config,
        timezone=context.timezone,
        conversation_id=conversation_id,
        files=files,
        context=context,
        new_conversation=new,
    )
    data = _with_local_times(row)
    data["eventsUrl"] = f"/api/runs/{row.run_id}/events"
    data["conversationId"] = conversation_id
    return data


async def _conversation(request: Request, body: RunRequest, identity: Identity) -> tuple[str, bool]:
    """The id of the caller's conversation the run continues (404 for one that is not
    theirs), or of a new one titled from the prompt; and whether it is new."""
    workflows = host(request).kernel.files.workflows
    wanted = body.conversation_id or body.workflow_id
    if wanted is not None:
        if await workflows.conversation(wanted, identity.user_id) is not None:
            return wanted, False
        if body.conversation_id is not None or await workflows.exists(wanted):
            raise HTTPException(404, f"no conversation {wanted}")
    created = await workflows.create_conversation(
        run_context(identity), prompt=body.prompt, workflow_id=body.workflow_id
    )
    return str(created.id), True


@router.get("")
async def list_runs(request: Request, identity: Identity = Depends(need_user)) -> dict[str, Any]:
    """The caller's latest runs."""
    rows = await host(request).runs.list(identity)
    zone = ZoneInfo(request_timezone())
    return {"runs": [_with_local_times(r, zone) for r in rows]}


@router.get("/{run_id}")
async def show_run(
    run_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """A run with its persisted trace (once the run ended)."""
    row = await _visible(request, run_id, identity)
    data = _with_local_times(row)
    trace = await host(request).kernel.agent.trace(run_id)
    data["trace"] = trace.to_wire() if trace is not None else None
    return data


@router.get("/{run_id}/events")
async def run_events(
    run_id: str,
    request: Request,
    identity: Identity = Depends(need_user),
    last_event_id_header: str | None = Header(default=None, alias="Last-Event-ID"),
) -> Any:
    """The run's events as Server-Sent Events; resumes after ``Last-Event-ID`` (header, or
    ``lastEventId`` in the query for a fresh page; 400 for one that is no event id)."""
    try:
        after = last_event_id(last_event_id_header, request.query_params.get("lastEventId"))
    except InvalidEventId as exc:
        raise HTTPException(400, str(exc)) from None
    state = host(request)
    try:
        await state.runs.check_visible(run_id, identity)
    except RunNotFound:
        raise HTTPException(404, f"no run {run_id}") from None
    events = state.runs.events(run_id, after, keepalive=state.settings.ping_interval_s)

    async def end() -> dict[str, Any]:
        row = await state.runs.get(run_id, identity)
        return {"runId": run_id, "status": row.status, "lastEventId": row.last_seq}

    return sse_response(events, end)


@router.post("/{run_id}/cancel")
async def cancel_run(
    run_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Ask a running run to stop (it ends ``cancelled``); a disconnect never does this."""
    await _visible(request, run_id, identity)
    cancelled = await host(request).runs.cancel(run_id, identity)
    return {"runId": run_id, "cancelled": cancelled}


class ResumeRequest(WireModel):
    """``POST /api/runs/{id}/resume``: ``confirmWrites`` after the caller checked the writes
    the interrupted run left unfinished."""

    confirm_writes: bool = False


@router.post("/{run_id}/resume", status_code=202)
async def resume_run(
    run_id: str,
    request: Request,
    body: ResumeRequest | None = None,
    identity: Identity = Depends(need_user),
) -> dict[str, Any]:
    """Run an ``interrupted`` run again, as a new run in its conversation. 409 for a run
    that was not interrupted, and for one that left writes unfinished unless
    ``confirmWrites`` (the answer lists them in ``unfinishedWrites``)."""
    runs = host(request).runs
    try:
        async with runs.gate.turn():
            confirm = bool(body and body.confirm_writes)
            row = await runs.resume(run_id, identity, confirm_writes=confirm)
    except RunNotFound:
        raise HTTPException(404, f"no run {run_id}") from None
    except UnfinishedWrites as exc:
        detail = {"message": str(exc), "unfinishedWrites": exc.writes}
        raise HTTPException(409, detail) from None
    except RunNotResumable as exc:
        raise HTTPException(409, str(exc)) from None
    data = _with_local_times(row)
    data["eventsUrl"] = f"/api/runs/{row.run_id}/events"
    data["resumedFrom"] = run_id
    return data
