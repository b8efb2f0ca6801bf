"""Conversations: chat workflows a person keeps (title, prompts and answers, attached files).

A conversation is a :class:`~nyla.files.tables.WorkflowRow` with a title. Each run in it adds
a *prompt* message (the user's words, its attached files as chat documents) and, when the run
ends, an *answer* (the final text and its citations) or an *error*; both carry the run id.
The agent of a later run sees the prompts and answers of the earlier runs as its history
(:func:`history_messages`), and its round memory is kept under the same workflow id.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, or_, select

from nyla.errors import FileAccessError
from nyla.files.tables import DocumentRow, MessageRow, WorkflowRow
from nyla.models.agent import RunContext
from nyla.models.ai import Message, Role
from nyla.models.base import WireModel
from nyla.models.chat import ChatDocument, ChatMessage, ChatWorkflow, WorkflowSummary

if TYPE_CHECKING:
    from nyla.models.files import FileItem

#: statuses of a conversation's messages (tool output bound to a workflow is ``step``)
PROMPT, ANSWER, FAILED = "prompt", "answer", "error"
TITLE_CHARS = 60
#: the history a run gets: this many prompts and answers at most, each cut to HISTORY_CHARS
HISTORY_MESSAGES = 20
HISTORY_CHARS = 4000


class Conversation(WireModel):
    """A conversation as a list shows it."""

    id: str
    title: str
    created_at: datetime | None = None
    updated_at: datetime | None = None
    message_count: int = 0


def title_from(prompt: str) -> str:
    """A conversation's title from its first prompt: the first line, at most 60 characters."""
    line = next((ln.strip() for ln in prompt.splitlines() if ln.strip()), "")
    line = " ".join(line.split())
    if len(line) > TITLE_CHARS:
        line = line[: TITLE_CHARS - 1].rstrip() + "…"
    return line or "New conversation"


def history_messages(workflow: ChatWorkflow, run_id: str | None) -> list[Message]:
    """The prompts and answers of ``workflow``'s earlier runs (not of ``run_id``), oldest
    first, as the agent's history; a prompt names the files attached to it."""
    turns = [
        m
        for m in workflow.messages
        if m.status in (PROMPT, ANSWER) and m.message and (run_id is None or m.run_id != run_id)
    ][-HISTORY_MESSAGES:]
    history: list[Message] = []
    for m in turns:
        text = m.message[:HISTORY_CHARS]
        if m.documents:
            text += "\n" + "\n".join(
                f"[attached: {d.file_name} (file id {d.file_id})]" for d in m.documents
            )
        history.append(
            Message(role=Role.USER if m.role == "user" else Role.ASSISTANT, content=text)
        )
    return history


class Conversations:
    """The conversation side of :class:`~nyla.files.bridge.WorkflowStore` (``db`` comes
    from it)."""

    db: Any

    async def list_conversations(self, user_id: str, *, limit: int = 200) -> list[Conversation]:
        """The user's conversations, most recently active first."""
        count = (
            select(func.count(MessageRow.id))
            .where(MessageRow.workflow_id == WorkflowRow.id, MessageRow.status != "step")
            .scalar_subquery()
        )
        activity = func.coalesce(WorkflowRow.updated_at, WorkflowRow.created_at)
        query = (
            select(WorkflowRow, count)
            .where(WorkflowRow.user_id == user_id, WorkflowRow.title.is_not(None))
            .order_by(activity.desc(), WorkflowRow.id)
            .limit(limit)
        )
        async with self.db.session() as s:
            rows = (await s.execute(query)).all()
        return [_conversation(row, int(n or 0)) for row, n in rows]

    async def history(
        self, context: RunContext, *, limit: int = 20, search: str | None = None
    ) -> list[WorkflowSummary]:
        """``context``'s user's chat workflows in its mandate (or in none), most recently
        active first; ``search`` keeps those whose title or a message contains it."""
        count = (
            select(func.count(MessageRow.id))
            .where(MessageRow.workflow_id == WorkflowRow.id, MessageRow.status != "step")
            .scalar_subquery()
        )
        activity = func.coalesce(WorkflowRow.updated_at, WorkflowRow.created_at)
        query = select(WorkflowRow, count).where(
            WorkflowRow.user_id == context.user_id,
            or_(WorkflowRow.mandate_id.is_(None), WorkflowRow.mandate_id == context.mandate_id),
        )
        if search:
            pattern = f"%{_like_escaped(search)}%"
            said = select(MessageRow.id).where(
                MessageRow.workflow_id == WorkflowRow.id,
                MessageRow.message.ilike(pattern, escape="\\"),
            )
            query = query.where(or_(WorkflowRow.title.ilike(pattern, escape="\\"), said.exists()))
        query = query.order_by(activity.desc(), WorkflowRow.id).limit(limit)
        async with self.db.session() as s:
            rows = (await s.execute(query)).all()
        return [
            WorkflowSummary(
                id=row.id,
                title=row.title,
                feature_instance_id=row.feature_instance_id,
                created_at=row.created_at,
                updated_at=row.updated_at or row.created_at,
                message_count=int(n or 0),
            )
            for row, n in rows
        ]

    async def create_conversation(
        self,
        context: RunContext,
        title: str | None = None,
        *,
        prompt: str | None = None,
        workflow_id: str | None = None,
    ) -> Conversation:
        """A new, empty conversation of the context's user, titled ``title`` or from its
        first ``prompt``; ``workflow_id`` chooses its id (a new one without)."""
        now = datetime.now(UTC)
        row = WorkflowRow(
            id=workflow_id or uuid.uuid4().hex,
            user_id=context.user_id,
            mandate_id=context.mandate_id,
            feature_instance_id=context.feature_instance_id,
            title=" ".join((title or "").split()) or title_from(prompt or ""),
            created_at=now,
            updated_at=now,
        )
        async with self.db.session() as s:
            s.add(row)
        return _conversation(row, 0)

    async def exists(self, workflow_id: str) -> bool:
        """Whether a workflow of that id exists (anybody's, conversation or not)."""
        async with self.db.session() as s:
            return await s.get(WorkflowRow, workflow_id) is not None

    async def conversation(self, workflow_id: str, user_id: str) -> Conversation | None:
        """One of the user's conversations (``None`` for another user's or none)."""
        async with self.db.session() as s:
            row = await s.get(WorkflowRow, workflow_id)
            if row is None or row.user_id != user_id or row.title is None:
                return None
            n = await s.scalar(
                select(func.count(MessageRow.id)).where(
                    MessageRow.workflow_id == workflow_id, MessageRow.status != "step"
                )
            )
        return _conversation(row, int(n or 0))

    async def rename_conversation(
        self, workflow_id: str, user_id: str, title: str
    ) -> Conversation | None:
        """Give the user's conversation a new title (``None``: no such conversation)."""
        async with self.db.session() as s:
            row = await s.get(WorkflowRow, workflow_id)
            if row is None or row.user_id != user_id or row.title is None:
                return None
            row.title, row.updated_at = title, datetime.now(UTC)
        return await self.conversation(workflow_id, user_id)

    async def delete_conversation(self, workflow_id: str, user_id: str) -> bool:
        """Delete the user's conversation with its messages, their document references and
        its round and workflow memory (the files themselves stay). False when there is no
        such conversation."""
        from nyla.tables.knowledge import RoundMemory, WorkflowMemory

        async with self.db.session() as s:
            row = await s.get(WorkflowRow, workflow_id)
            if row is None or row.user_id != user_id or row.title is None:
                return False
            await s.execute(delete(DocumentRow).where(DocumentRow.workflow_id == workflow_id))
            await s.execute(delete(MessageRow).where(MessageRow.workflow_id == workflow_id))
            for memory in (RoundMemory, WorkflowMemory):
                await s.execute(
                    delete(memory).where(
                        memory.workflow_id == workflow_id, memory.user_id == user_id
                    )
                )
            await s.delete(row)
        return True

    async def workflow_of_run(self, run_id: str) -> str | None:
        """The conversation a run's prompt was stored in (``None``: none)."""
        async with self.db.session() as s:
            found = await s.scalar(
                select(MessageRow.workflow_id)
                .where(MessageRow.run_id == run_id, MessageRow.status == PROMPT)
                .limit(1)
            )
        return str(found) if found is not None else None

    async def for_turn(self, workflow_id: str, context: RunContext) -> ChatWorkflow:
        """The workflow a turn goes into, without its messages (:meth:`add_turn` needs its
        id and round): one statement where ``load`` reads every message. Another user's,
        or none, raises :class:`FileAccessError`."""
        async with self.db.read_session() as s:
            row = await s.get(WorkflowRow, workflow_id)
        if row is None or row.user_id != context.user_id:
            raise FileAccessError(f"workflow {workflow_id!r} not found")
        return ChatWorkflow(
            id=row.id,
            user_id=row.user_id,
            mandate_id=row.mandate_id,
            feature_instance_id=row.feature_instance_id,
            current_round=row.current_round,
        )

    async def add_turn(
        self,
        workflow: ChatWorkflow,
        *,
        role: str,
        status: str,
        text: str,
        run_id: str | None,
        files: list[FileItem] | None = None,
        citations: list[dict[str, Any]] | None = None,
    ) -> ChatMessage:
        """Store a prompt, answer or error of a run in the conversation (which becomes its
        most recently active)."""
        message_id = str(uuid.uuid4())
        message = ChatMessage(
            id=message_id,
            role=role,
            status=status,
            message=text,
            documents_label=f"attached:{message_id[:8]}" if files else None,
            round_number=workflow.current_round,
            run_id=run_id,
            citations=citations,
            documents=[
                ChatDocument(
                    id=str(uuid.uuid4()),
                    message_id=message_id,
                    file_id=f.id,
                    file_name=f.name,
                    mime_type=f.mime_type,
                    size=f.size,
                )
                for f in files or []
            ],
        )
        return await self.store_message_with_documents(workflow, message, touch=True)

    async def store_message_with_documents(
        self, workflow: ChatWorkflow, message: ChatMessage, *, touch: bool = False
    ) -> ChatMessage:
        raise NotImplementedError  # provided by WorkflowStore


def _like_escaped(text: str) -> str:
    """``text`` as a literal inside a LIKE pattern (``\\``, ``%`` and ``_`` escaped)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _conversation(row: WorkflowRow, count: int) -> Conversation:
    return Conversation(
        id=row.id,
        title=row.title or "",
        created_at=row.created_at,
        updated_at=row.updated_at or row.created_at,
        message_count=count,
    )
