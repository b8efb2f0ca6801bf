"""A chat workflow as a run holds it in memory: its messages and the documents they carry
(what :mod:`nyla.files.bridge` stores and :mod:`nyla.files.conversations` reads back), and
the port through which tools reach the stored ones (:class:`WorkflowMessages`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, Field

from nyla.models.agent import RunContext

#: how a step names one chat document (``docItem:<id>``)
DOC_ITEM = "docItem:"


class ChatDocument(BaseModel):
    """A workflow's reference to a stored file."""

    id: str
    message_id: str
    file_id: str
    file_name: str
    mime_type: str
    size: int = 0
    round_number: int = 0
    task_number: int = 0
    action_number: int = 0

    def to_wire(self) -> dict[str, Any]:
        """camelCase, as results and the conversation view show it: its ``docItem``
        reference, file and the round, task and action that made it."""
        return {
            "documentId": self.id,
            "documentRef": f"{DOC_ITEM}{self.id}",
            "messageId": self.message_id,
            "fileId": self.file_id,
            "name": self.file_name,
            "mimeType": self.mime_type,
            "size": self.size,
            "roundNumber": self.round_number,
            "taskNumber": self.task_number,
            "actionNumber": self.action_number,
        }


class ChatMessage(BaseModel):
    """A workflow message; ``documents_label`` names its documents for ``docList:<label>``.
    A conversation's prompts and answers carry their ``run_id`` (answers their
    ``citations``)."""

    id: str
    role: str = "assistant"
    status: str = "step"
    message: str = ""
    documents_label: str | None = None
    round_number: int = 0
    documents: list[ChatDocument] = Field(default_factory=list)
    run_id: str | None = None
    citations: list[dict[str, Any]] | None = None
    created_at: datetime | None = None


class ChatWorkflow(BaseModel):
    """A chat workflow with its messages, as a run holds it in memory."""

    id: str
    user_id: str
    mandate_id: str | None = None
    feature_instance_id: str | None = None
    current_round: int = 0
    messages: list[ChatMessage] = Field(default_factory=list)

    def documents(self) -> list[ChatDocument]:
        """Every document of every message, oldest first."""
        return [d for m in self.messages for d in m.documents]


class WorkflowSummary(BaseModel):
    """One of a user's chat workflows as ``listWorkflowHistory`` lists it."""

    id: str
    title: str | None = None
    feature_instance_id: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    message_count: int = 0


class WorkflowMessages(Protocol):
    """The user's chat workflows as tools reach them (``ctx.services.files.workflows``):
    where a file a tool produced is bound to the run's chat workflow, and what the
    cross-workflow tools read."""

    async def store_message_with_documents(
        self, workflow: ChatWorkflow, message: ChatMessage
    ) -> Any: ...

    async def load(self, workflow_id: str, context: RunContext) -> ChatWorkflow:
        """The workflow with its messages (raises ``FileAccessError`` for another user's)."""
        ...

    async def history(
        self, context: RunContext, *, limit: int = 20, search: str | None = None
    ) -> list[WorkflowSummary]:
        """``context``'s user's chat workflows (in its mandate or none), latest first."""
        ...
