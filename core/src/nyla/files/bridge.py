"""The agent-tool file bridge (seed 003): a file a tool produces becomes a FileItem, a
ChatDocument bound to the active workflow, and a ChatMessage carrying it, so that every tool
consuming a ``documentList`` can find it through ``docItem:<chatDocumentId>``.

The in-memory :class:`ChatWorkflow` of a run is kept in step with the database: storing a
message appends it to ``workflow.messages`` too, so the same run sees it at once.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select, update

from nyla.errors import FileAccessError
from nyla.files.conversations import Conversations
from nyla.files.docrefs import DocumentReference, coerce_document_reference_list
from nyla.files.tables import DocumentRow, MessageRow, WorkflowRow
from nyla.models.agent import RunContext
from nyla.models.chat import ChatDocument as ChatDocument
from nyla.models.chat import ChatMessage as ChatMessage
from nyla.models.chat import ChatWorkflow as ChatWorkflow
from nyla.models.files import FileItem
from nyla.models.tool_services import WorkflowMessages
from nyla.models.tools import ToolContext

log = logging.getLogger(__name__)


class WorkflowStore(Conversations):
    """Loads workflows and stores their messages (with documents); keeps conversations."""

    def __init__(self, files: Any) -> None:
        self.files = files

    @property
    def db(self) -> Any:
        return self.files.db

    async def load(self, workflow_id: str, context: RunContext) -> ChatWorkflow:
        """The workflow with its messages (created for the caller when new). A workflow of
        another user raises :class:`FileAccessError`."""
        async with self.db.session() as s:
            row = await s.get(WorkflowRow, workflow_id)
            if row is None:
                row = WorkflowRow(
                    id=workflow_id,
                    user_id=context.user_id,
                    mandate_id=context.mandate_id,
                    feature_instance_id=context.feature_instance_id,
                )
                s.add(row)
                await s.flush()
            elif row.user_id != context.user_id:
                raise FileAccessError(f"workflow {workflow_id!r} not found")
            workflow = ChatWorkflow(
                id=row.id,
                user_id=row.user_id,
                mandate_id=row.mandate_id,
                feature_instance_id=row.feature_instance_id,
                current_round=row.current_round,
            )
            messages = (
                await s.scalars(
                    select(MessageRow)
                    .where(MessageRow.workflow_id == workflow_id)
                    .order_by(MessageRow.seq)
                )
            ).all()
            docs = (
                await s.scalars(select(DocumentRow).where(DocumentRow.workflow_id == workflow_id))
            ).all()
        by_message: dict[str, list[ChatDocument]] = {}
        for d in docs:
            by_message.setdefault(d.message_id, []).append(_document(d))
        workflow.messages = [
            ChatMessage(
                id=m.id,
                role=m.role,
                status=m.status,
                message=m.message,
                documents_label=m.documents_label,
                round_number=m.round_number,
                documents=by_message.get(m.id, []),
                run_id=m.run_id,
                citations=m.citations,
                created_at=m.created_at,
            )
            for m in messages
        ]
        return workflow

    async def store_message_with_documents(
        self, workflow: ChatWorkflow, message: ChatMessage, *, touch: bool = False
    ) -> ChatMessage:
        """Persist a message and its documents, then append it to ``workflow.messages``;
        ``touch`` makes the workflow the most recently active (in the same transaction).
        A message of ``workflow`` stored before with the same id is replaced, documents and
        all, in its place: a step bound again under its id (a workflow node run again after
        its worker died between binding and being recorded done) is not bound twice."""
        async with self.db.session() as s:
            before = await s.scalar(
                select(MessageRow.seq).where(
                    MessageRow.id == message.id, MessageRow.workflow_id == workflow.id
                )
            )
            if before is not None:
                await s.execute(delete(DocumentRow).where(DocumentRow.message_id == message.id))
                await s.execute(delete(MessageRow).where(MessageRow.id == message.id))
            if touch:
                await s.execute(
                    update(WorkflowRow)
                    .where(WorkflowRow.id == workflow.id)
                    .values(updated_at=datetime.now(UTC))
                )
            seq = await s.scalar(
                select(func.coalesce(func.max(MessageRow.seq), 0)).where(
                    MessageRow.workflow_id == workflow.id
                )
            )
            s.add(
                MessageRow(
                    id=message.id,
                    workflow_id=workflow.id,
                    seq=before if before is not None else int(seq or 0) + 1,
                    role=message.role,
                    status=message.status,
                    message=message.message,
                    documents_label=message.documents_label,
                    round_number=message.round_number,
                    run_id=message.run_id,
                    citations=message.citations,
                )
            )
            await s.flush()
            s.add_all(
                DocumentRow(
                    id=d.id,
                    message_id=message.id,
                    workflow_id=workflow.id,
                    file_id=d.file_id,
                    file_name=d.file_name,
                    mime_type=d.mime_type,
                    size=d.size,
                    round_number=d.round_number,
                    task_number=d.task_number,
                    action_number=d.action_number,
                )
                for d in message.documents
            )
        held = [i for i, m in enumerate(workflow.messages) if m.id == message.id]
        if held:
            workflow.messages[held[0]] = message
        else:
            workflow.messages.append(message)
        return message


def _document(row: DocumentRow) -> ChatDocument:
    return ChatDocument(
        id=row.id,
        message_id=row.message_id,
        file_id=row.file_id,
        file_name=row.file_name,
        mime_type=row.mime_type,
        size=row.size,
        round_number=row.round_number,
        task_number=row.task_number,
        action_number=row.action_number,
    )


async def attach_file_as_chat_document(
    workflows: WorkflowMessages | None,
    workflow: ChatWorkflow | None,
    file_item: FileItem,
    *,
    label: str = "agent_tool_output",
    user_message: str = "",
    role: str = "assistant",
    round_number: int | None = None,
    task_number: int = 0,
    action_number: int = 0,
) -> str | None:
    """Bind a stored file to the workflow as a ChatDocument inside a new ChatMessage,
    numbered ``round_number`` (the workflow's current round without one), ``task_number``
    and ``action_number``.

    Returns the ChatDocument id, or ``None`` (logged, never raised) when there is no active
    workflow or storing fails. The message gets a unique documents label based on ``label``.
    """
    if workflow is None or workflows is None:
        log.warning("no active workflow: %s stays reachable by file id only", file_item.id)
        return None
    try:
        number = workflow.current_round if round_number is None else round_number
        message_id = str(uuid.uuid4())
        document = ChatDocument(
            id=str(uuid.uuid4()),
            message_id=message_id,
            file_id=file_item.id,
            file_name=file_item.name,
            mime_type=file_item.mime_type,
            size=file_item.size,
            round_number=number,
            task_number=task_number,
            action_number=action_number,
        )
        message = ChatMessage(
            id=message_id,
            role=role,
            status="step",
            message=user_message,
            documents_label=f"{label}:{message_id[:8]}",
            round_number=number,
            documents=[document],
        )
        await workflows.store_message_with_documents(workflow, message)
        return document.id
    except Exception as exc:
        log.warning("binding %s to workflow %s failed: %s", file_item.id, workflow.id, exc)
        return None


async def attach_to_run(ctx: ToolContext, item: FileItem, label: str) -> str | None:
    """Bind a file a tool produced to the run's workflow (``ctx.workflow``) as a
    chat document numbered by the call (``ctx.round``, ``ctx.task_number``,
    ``ctx.action_number``); its id, or ``None`` without a workflow (see
    :func:`attach_file_as_chat_document`)."""
    workflow = ctx.workflow
    return await attach_file_as_chat_document(
        ctx.services.files.workflows if workflow is not None else None,
        workflow,
        item,
        label=label,
        round_number=ctx.round,
        task_number=ctx.task_number,
        action_number=ctx.action_number,
    )


def format_tool_file_result(verb: str, item: FileItem, doc_id: str | None) -> str:
    """The result text of a file-producing tool: both references, ``docItem`` first."""
    lines = [f"{verb} '{item.name}' ({item.size} bytes)"]
    if doc_id:
        lines.append(f"  documentList ref: docItem:{doc_id}")
    lines.append(f"  file id: {item.id}")
    return "\n".join(lines)


def resolve_documents(
    workflow: ChatWorkflow | None, references: Any
) -> tuple[list[ChatDocument], list[str]]:
    """The chat documents ``references`` point at (any accepted shape), and the references
    that matched nothing. ``docItem:<id>`` matches a document id; ``docList:<label>`` every
    document of the messages with that label (or label prefix)."""
    refs: list[DocumentReference] = coerce_document_reference_list(references)
    if workflow is None:
        return [], [str(r) for r in refs]
    found: list[ChatDocument] = []
    missing: list[str] = []
    for ref in refs:
        if ref.kind == "docItem":
            hits = [d for d in workflow.documents() if d.id == ref.value]
        else:
            hits = [
                d
                for m in workflow.messages
                if m.documents_label
                and (m.documents_label == ref.value or m.documents_label.startswith(ref.value))
                for d in m.documents
            ]
        if hits:
            found.extend(h for h in hits if h not in found)
        else:
            missing.append(str(ref))
    return found, missing
