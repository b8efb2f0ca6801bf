"""Tables of the knowledge store on the kernel's one metadata.

Embeddings live in an *untyped* ``vector`` column so that models of different dimensions
(1536 for OpenAI, 384 for the local embedders) share one table; every chunk records its
``embedding_model``. Each model gets its own partial expression HNSW index
``((embedding::vector(N))) WHERE embedding_model = '<model>'`` (see :mod:`nyla.knowledge.vectors`),
and every search filters on one model, so vectors of different models never meet in one
ranking. One table keeps scope filters, purges and the inventory single queries; one table per
dimension would need a table per model anyway to keep models apart.

Scope is denormalized onto every chunk as ``owner_key`` (``personal:<user>``,
``mandate:<id>``, ``featureInstance:<id>``, ``global``), a typed column every search filters
with ``owner_key = ANY(:readable)`` (btree-indexed on the file index, where the exact path
starts).

The chunk table is laid out for the write path (measured in ``bench/rag.py``): every index a
COPY has to maintain costs ingest rate, so the chunk table has its primary key and nothing
else. A chunk's id packs the number of its file and its position
(:func:`~nyla.knowledge.vectors.chunk_id`), so the primary key finds a file's chunks (re-index,
purge, and the exact search path, which reaches a scope's chunks through the file index's
``owner_key`` btree). What else is looked up per chunk lives in :class:`ChunkLookup`: its
full-text terms (hybrid search) and its content hash per scope (dedupe). A ``tsvector`` and
its GIN index cost more than the COPY itself, so bulk loads fill the lookup rows in one pass
after the load (like the HNSW index); a single file gets them in its own transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    DDL,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    Sequence,
    String,
    Text,
    UniqueConstraint,
    event,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from nyla.db import Base

#: numbers the indexed files; a chunk id is ``file_no << CHUNK_ID_BITS | seq``
FILE_NO_SEQUENCE = Sequence("knowledge_file_no_seq", metadata=Base.metadata)


class FileContentIndex(Base):
    """Per file: structure index, summary, status, scope with owner ids, neutralization.

    ``file_no`` is assigned once per file and kept across re-indexes; its chunks have the ids
    :func:`~nyla.knowledge.vectors.chunk_id_range` ``(file_no)``. ``lookups_ready`` is false
    while the file's chunks wait for the lookup pass of a bulk load (:class:`ChunkLookup`)."""

    __tablename__ = "knowledge_file_index"
    __table_args__ = {"info": {"derived": True}}

    # text: a synced item's id is its connection's id and the vendor's item id (an Outlook
    # message id alone is about 150 characters)
    file_id: Mapped[str] = mapped_column(Text, primary_key=True)
    file_no: Mapped[int] = mapped_column(
        BigInteger, FILE_NO_SEQUENCE, server_default=FILE_NO_SEQUENCE.next_value(), unique=True
    )
    lookups_ready: Mapped[bool] = mapped_column(Boolean, default=False)
    name: Mapped[str] = mapped_column(Text)
    mime_type: Mapped[str] = mapped_column(String(200), default="application/octet-stream")
    size: Mapped[int] = mapped_column(BigInteger, default=0)
    content_hash: Mapped[str] = mapped_column(String(64), default="")
    structure: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    object_summary: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    scope: Mapped[str] = mapped_column(String(32))
    owner_key: Mapped[str] = mapped_column(String(200), index=True)
    user_id: Mapped[str] = mapped_column(String(128), index=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True, index=True)
    feature_instance_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    data_source_id: Mapped[str | None] = mapped_column(String(128), nullable=True, index=True)
    connection_id: Mapped[str | None] = mapped_column(String(128), nullable=True, index=True)
    source_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: where the vendor shows the item (a synced item's web address; citations open it)
    web_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    is_neutralized: Mapped[bool] = mapped_column(Boolean, default=False)
    neutralization_status: Mapped[str] = mapped_column(String(32), default="none")
    embedding_model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    token_count: Mapped[int] = mapped_column(Integer, default=0)
    indexed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now()
    )


class ContentChunk(Base):
    """A persisted chunk with its embedding and the scope column searches filter on.

    ``id`` is :func:`~nyla.knowledge.vectors.chunk_id` ``(file_no, seq)``: its file is the
    file index row with ``file_no = id >> CHUNK_ID_BITS`` (which holds the file id, data
    source and the rest of what all its chunks share), its position ``id & (2**20 - 1)``.
    ``content_hash`` is the 16-byte digest of :func:`~nyla.knowledge.chunking.content_hash`.
    The chunk's scope is the prefix of ``owner_key`` (always the owner key of its file).
    A row holds only what differs per chunk, as a COPY writes every column of every row. No
    foreign key to the file index, and no secondary index while a bulk load writes: each
    costs ingest rate per COPY row (every delete path removes chunks by id range itself).
    After a bulk load the scope btree (owner key, model) is built with the HNSW index
    (:func:`~nyla.knowledge.vectors.create_scope_index`), for exact searches of a scope."""

    __tablename__ = "knowledge_chunk"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    data: Mapped[str] = mapped_column(Text)
    context_ref: Mapped[str] = mapped_column(Text, default="")
    content_type: Mapped[str] = mapped_column(Text, default="text")
    token_count: Mapped[int] = mapped_column(Integer, default=0)
    content_hash: Mapped[bytes] = mapped_column(LargeBinary)
    owner_key: Mapped[str] = mapped_column(Text)
    embedding_model: Mapped[str] = mapped_column(Text)
    embedding: Mapped[Any] = mapped_column(Vector())
    # added after the first layout: a server default lets an existing table gain it
    language: Mapped[str] = mapped_column(Text, default="", server_default="")

    __table_args__ = {"info": {"derived": True}}


# Keep rows whole: with pgvector's default EXTERNAL storage a chunk row past ~2 kB moves its
# vector to the TOAST table (an extra insert per row, a detoast per distance), and with MAIN
# alone the toaster tries to compress the vector first (CPU spent on incompressible floats
# on every COPY row). MAIN plus the largest toast_tuple_target leaves rows up to 8 kB
# untouched; bigger ones get their text compressed before the vector is considered.
# (Text columns instead of varchar(n): no length check per COPY row.)
event.listen(
    ContentChunk.__table__,
    "after_create",
    DDL(
        "ALTER TABLE %(table)s ALTER COLUMN embedding SET STORAGE MAIN, "
        "SET (toast_tuple_target = 8160)"
    ),
)


class ChunkLookup(Base):
    """What is looked up per chunk besides its vector: its full-text terms (``tsvector`` in
    the configuration of its ``language``, see :mod:`nyla.knowledge.text_search`;
    GIN-indexed, for hybrid search) and its content hash per scope (btree, for dedupe).
    Written with the chunk for a single file, in one pass after the load for bulk loads;
    meanwhile the chunk is found by vector and exact search. ``language`` is ``NULL`` on
    rows an older nyla built (``simple`` terms, no accent folding) until
    :func:`~nyla.knowledge.text_search.reanalyze` rebuilds them."""

    __tablename__ = "knowledge_chunk_lookup"

    chunk_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    owner_key: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[bytes] = mapped_column(LargeBinary)
    tsv: Mapped[Any] = mapped_column(TSVECTOR)
    language: Mapped[str | None] = mapped_column(Text, nullable=True)

    __table_args__ = (
        Index("ix_knowledge_chunk_lookup_tsv", "tsv", postgresql_using="gin"),
        Index("ix_knowledge_chunk_lookup_owner_hash", "owner_key", "content_hash"),
        {"info": {"derived": True}},
    )


class RoundMemory(Base):
    """One agent round: files it touched, tool results, decisions, with an embedding so a
    later round can find it even after the conversation manager summarized it away.
    ``scope_key`` (user, mandate, feature instance of the run) is what reads filter on."""

    __tablename__ = "knowledge_round_memory"
    __table_args__ = {"info": {"derived": True}}

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    scope_key: Mapped[str] = mapped_column(Text, index=True)
    run_id: Mapped[str] = mapped_column(String(128), index=True)
    workflow_id: Mapped[str | None] = mapped_column(String(200), nullable=True, index=True)
    round: Mapped[int] = mapped_column(Integer)
    user_id: Mapped[str] = mapped_column(String(128), index=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    feature_instance_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    file_refs: Mapped[list[Any]] = mapped_column(JSONB, default=list)
    tool_results: Mapped[list[Any]] = mapped_column(JSONB, default=list)
    decisions: Mapped[list[Any]] = mapped_column(JSONB, default=list)
    summary: Mapped[str] = mapped_column(Text, default="")
    embedding_model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    embedding: Mapped[Any | None] = mapped_column(Vector(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class WorkflowMemory(Base):
    """Workflow-scoped key/value cache (entities, facts), optionally embedded; scoped by
    ``scope_key`` like :class:`RoundMemory` (one workflow id in two mandates is two caches)."""

    __tablename__ = "knowledge_workflow_memory"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    scope_key: Mapped[str] = mapped_column(Text)
    workflow_id: Mapped[str] = mapped_column(String(200))
    key: Mapped[str] = mapped_column(String(300))
    kind: Mapped[str] = mapped_column(String(32), default="entity")
    value: Mapped[Any] = mapped_column(JSONB)
    user_id: Mapped[str] = mapped_column(String(128))
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    embedding_model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    embedding: Mapped[Any | None] = mapped_column(Vector(), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now()
    )

    __table_args__ = (
        UniqueConstraint("scope_key", "workflow_id", "key"),
        {"info": {"derived": True}},
    )


class UserConnection(Base):
    """A user's connection to an external service: which account, granted scopes, status
    (``active``, ``needs_reconsent``, ``error``) and the global ingestion consent. Its tokens
    are in :class:`nyla.connections.tables.ConnectionCredential`."""

    __tablename__ = "user_connection"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    service: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[str] = mapped_column(String(128), index=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    label: Mapped[str] = mapped_column(Text, default="")
    knowledge_ingestion_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    # columns added after the first layout carry server defaults: an existing table gets them
    # with ALTER TABLE ... ADD COLUMN (see nyla.db)
    account: Mapped[str] = mapped_column(Text, default="", server_default="")
    scopes: Mapped[list[str]] = mapped_column(JSONB, default=list, server_default="[]")
    status: Mapped[str] = mapped_column(String(32), default="active", server_default="active")
    status_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict, server_default="{}")


class DataSource(Base):
    """An element of a connection's tree. ``rag_index_enabled``, ``neutralize`` and ``scope``
    are ``None`` when not set explicitly: the policy resolver then inherits them from the
    longest path prefix that sets them. ``settings`` holds ``ragLimits`` (no inheritance)."""

    __tablename__ = "data_source"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    connection_id: Mapped[str] = mapped_column(
        String(128), ForeignKey("user_connection.id", ondelete="CASCADE"), index=True
    )
    path: Mapped[str] = mapped_column(Text, default="/")
    label: Mapped[str] = mapped_column(Text, default="")
    user_id: Mapped[str] = mapped_column(String(128))
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    feature_instance_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    rag_index_enabled: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    neutralize: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    scope: Mapped[str | None] = mapped_column(String(32), nullable=True)
    last_indexed: Mapped[float | None] = mapped_column(Float, nullable=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)

    __table_args__ = (UniqueConstraint("connection_id", "path"),)


class KnowledgeAudit(Base):
    """Audit record of a permission-relevant change (settings, consent, purge)."""

    __tablename__ = "knowledge_audit"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    category: Mapped[str] = mapped_column(String(32))
    action: Mapped[str] = mapped_column(String(64))
    actor_user_id: Mapped[str] = mapped_column(String(128))
    target_id: Mapped[str] = mapped_column(String(128))
    details: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)


def audit(
    session: AsyncSession, action: str, actor: str, target: str, details: dict[str, Any]
) -> None:
    """Add an audit record (category ``permission``) to the session: the connection store and
    the knowledge store's consent code both write them, in the transaction of the change."""
    session.add(
        KnowledgeAudit(
            category="permission",
            action=action,
            actor_user_id=actor,
            target_id=target,
            details=details,
        )
    )
