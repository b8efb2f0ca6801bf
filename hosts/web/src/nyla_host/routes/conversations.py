"""Conversations: the caller's persisted chats (list, create, open, rename, delete). A run
continues one with ``POST /api/runs {conversationId}``; see :mod:`nyla_host.runs`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import Field
from sqlalchemy import select

from nyla.sdk import WireModel
from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.links import with_urls
from nyla_host.routes.catalog import run_context
from nyla_host.state import host
from nyla_host.tables import HostRunRow

router = APIRouter(prefix="/api/conversations", tags=["conversations"])

#: the messages a conversation shows: prompts, answers and errors (not tool steps)
SHOWN = ("prompt", "answer", "error")


class NewConversation(WireModel):
    """``POST /api/conversations``: an optional title."""

    title: str | None = Field(default=None, max_length=200)


class Rename(WireModel):
    """``PATCH /api/conversations/{id}``: the new title."""

    title: str = Field(min_length=1, max_length=200)


async def _owned(request: Request, conversation_id: str, identity: Identity) -> Any:
    workflows = host(request).kernel.files.workflows
    conversation = await workflows.conversation(conversation_id, identity.user_id)
    if conversation is None:
        raise HTTPException(404, f"no conversation {conversation_id}")
    return conversation


@router.get("")
async def list_conversations(
    request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """The caller's conversations, most recently active first."""
    items = await host(request).kernel.files.workflows.list_conversations(identity.user_id)
    return {"conversations": [c.to_wire() for c in items]}


@router.post("", status_code=201)
async def create_conversation(
    body: NewConversation, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """A new, empty conversation."""
    workflows = host(request).kernel.files.workflows
    return (await workflows.create_conversation(run_context(identity), body.title)).to_wire()


@router.get("/{conversation_id}")
async def show_conversation(
    conversation_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """A conversation with its messages (attached files, citations with links that open
    their source), the files attached to it, its runs, and every document bound to it
    (``documents``: those of its steps too — an action's or workflow node's result — each
    with its ``docItem`` reference, message, the run that bound it and its round, task and
    action numbers)."""
    conversation = await _owned(request, conversation_id, identity)
    state = host(request)
    context = run_context(identity).model_copy(update={"workflow_id": conversation_id})
    workflow = await state.kernel.files.workflows.load(conversation_id, context)
    shown = [m for m in workflow.messages if m.status in SHOWN]
    messages = []
    for m in shown:
        cited = await with_urls(state.kernel, state.runs.links, m.citations or [], context)
        messages.append(
            {
                "id": m.id,
                "role": m.role,
                "status": m.status,
                "content": m.message,
                "createdAt": m.created_at.isoformat() if m.created_at else None,
                "runId": m.run_id,
                "files": [{"id": d.file_id, "name": d.file_name} for d in m.documents],
                "citations": cited,
            }
        )
    files = {
        d.file_id: {"id": d.file_id, "name": d.file_name, "size": d.size, "mimeType": d.mime_type}
        for m in shown
        for d in m.documents
    }
    run_ids = list(dict.fromkeys(m.run_id for m in shown if m.run_id))
    async with state.kernel.db.session() as s:
        rows = (
            await s.execute(
                select(HostRunRow.run_id, HostRunRow.status).where(
                    HostRunRow.run_id.in_(run_ids), HostRunRow.user_id == identity.user_id
                )
            )
        ).all()
    status = dict(rows)
    documents = [
        {**d.to_wire(), "runId": m.run_id, "label": m.documents_label}
        for m in workflow.messages
        for d in m.documents
    ]
    return {
        **conversation.to_wire(),
        "messages": messages,
        "files": list(files.values()),
        "documents": documents,
        "runs": [{"runId": r, "status": status[r]} for r in run_ids if r in status],
    }


@router.patch("/{conversation_id}")
async def rename_conversation(
    conversation_id: str, body: Rename, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Give a conversation a new title."""
    workflows = host(request).kernel.files.workflows
    title = " ".join(body.title.split())
    if not title:
        raise HTTPException(400, "the title must not be blank")
    renamed = await workflows.rename_conversation(conversation_id, identity.user_id, title)
    if renamed is None:
        raise HTTPException(404, f"no conversation {conversation_id}")
    return renamed.to_wire()


@router.delete("/{conversation_id}")
async def delete_conversation(
    conversation_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Delete a conversation and its messages (the files attached to it stay)."""
    workflows = host(request).kernel.files.workflows
    if not await workflows.delete_conversation(conversation_id, identity.user_id):
        raise HTTPException(404, f"no conversation {conversation_id}")
    return {"deleted": conversation_id}
