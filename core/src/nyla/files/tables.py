"""Tables of the file store and the chat workflow: files, folders, workflows, messages and the
chat documents that bind a stored file to a workflow message (seed 003)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from nyla.db import Base


class FolderRow(Base):
    """A folder of the file store; scoped like the files it holds."""

    __tablename__ = "file_folders"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(512))
    parent_id: Mapped[str | None] = mapped_column(
        ForeignKey("file_folders.id", ondelete="CASCADE"), index=True
    )
    scope: Mapped[str] = mapped_column(String(32), default="personal")
    user_id: Mapped[str] = mapped_column(String(128), index=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128), index=True)
    feature_instance_id: Mapped[str | None] = mapped_column(String(128), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class FileRow(Base):
    """A stored file: content, metadata and the owner ids its scope is checked against."""

    __tablename__ = "files"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(512))
    mime_type: Mapped[str] = mapped_column(String(255), default="application/octet-stream")
    size: Mapped[int] = mapped_column(Integer, default=0)
    content_hash: Mapped[str] = mapped_column(String(64), index=True)
    content: Mapped[bytes] = mapped_column(LargeBinary)
    folder_id: Mapped[str | None] = mapped_column(
        ForeignKey("file_folders.id", ondelete="SET NULL"), index=True
    )
    tags: Mapped[list[str]] = mapped_column(JSON, default=list)
    scope: Mapped[str] = mapped_column(String(32), default="personal")
    user_id: Mapped[str] = mapped_column(String(128), index=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128), index=True)
    feature_instance_id: Mapped[str | None] = mapped_column(String(128), index=True)
    neutralize: Mapped[bool] = mapped_column(Boolean, default=False)
    data_source_id: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now()
    )


class WorkflowRow(Base):
    """A chat workflow (one conversation/session) whose messages carry documents. ``title``
    and ``updated_at`` may be null: rows an older nyla wrote have neither (the columns are
    added to such a table in place)."""

    __tablename__ = "chat_workflows"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), index=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128))
    feature_instance_id: Mapped[str | None] = mapped_column(String(128))
    current_round: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    title: Mapped[str | None] = mapped_column(Text, nullable=True)
    updated_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), nullable=True, index=True
    )


class MessageRow(Base):
    """A chat message of a workflow; ``documents_label`` groups its documents for
    ``docList:<label>`` references. A conversation's prompt and answer carry the ``run_id``
    of the run they belong to; an answer also the ``citations`` of the knowledge it used."""

    __tablename__ = "chat_messages"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    workflow_id: Mapped[str] = mapped_column(
        ForeignKey("chat_workflows.id", ondelete="CASCADE"), index=True
    )
    seq: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(32), default="step")
    message: Mapped[str] = mapped_column(Text, default="")
    documents_label: Mapped[str | None] = mapped_column(String(512), index=True)
    round_number: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    citations: Mapped[list[dict[str, object]] | None] = mapped_column(JSON, nullable=True)


class DocumentRow(Base):
    """A chat document: the reference of a workflow message to a stored file."""

    __tablename__ = "chat_documents"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    message_id: Mapped[str] = mapped_column(
        ForeignKey("chat_messages.id", ondelete="CASCADE"), index=True
    )
    workflow_id: Mapped[str] = mapped_column(String(128), index=True)
    file_id: Mapped[str] = mapped_column(ForeignKey("files.id", ondelete="CASCADE"), index=True)
    file_name: Mapped[str] = mapped_column(String(512))
    mime_type: Mapped[str] = mapped_column(String(255))
    size: Mapped[int] = mapped_column(Integer, default=0)
    round_number: Mapped[int] = mapped_column(Integer, default=0)
    task_number: Mapped[int] = mapped_column(Integer, default=0)
    action_number: Mapped[int] = mapped_column(Integer, default=0)
