"""Round memory (per agent round, embedded) and workflow memory (workflow-scoped key/value).

Every row carries the ``scope_key`` of the run that wrote it (user, mandate and feature
instance, :func:`scope_key`) and every read filters on the reader's: the same user with the
same workflow id in another mandate or feature instance sees nothing of it, and neither do
cross-workflow hints.
"""

from __future__ import annotations

import json
import struct
from array import array
from collections.abc import Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from psycopg.adapt import Dumper
from psycopg.pq import Format
from pydantic_core import to_json
from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from nyla.knowledge.vectors import (
    sql_literal,
    vector_binary,
    vector_expr,
    vector_literal,
)
from nyla.models.agent import RoundToolResult, RunContext
from nyla.tables.knowledge import RoundMemory, WorkflowMemory
from nyla.text import clean_text

if TYPE_CHECKING:
    from nyla.db import Database

#: characters of one tool result kept in round memory
TOOL_RESULT_CHARS = 600


def scope_key(context: RunContext) -> str:
    """The memory scope of a run: its user, mandate and feature instance."""
    return json.dumps(
        [context.user_id, context.mandate_id, context.feature_instance_id], ensure_ascii=False
    )


def round_summary(
    file_refs: Sequence[str], tool_results: Sequence[Any], decisions: Sequence[Any]
) -> str:
    """The text of a round that gets embedded (and quoted by a later run's context): a line
    per decision, per tool result (``read_file: ...``, ``read_file failed: ...``; the start
    of its text) and the files.

    Plain lines, not each result as JSON: the keys and quotes of a JSON dump were about
    three quarters of a short result's tokens, the same in every round (they drew every
    summary's vector toward every other's), and everything the summary goes through pays
    by its length: the neutralization gate, the token count and the local model's tokenizer
    (a byte-pair model over the whole text). A round of four short results: 296 -> 80
    characters, 111 -> 43 tokens."""
    parts: list[str] = []
    for d in decisions:
        parts.append(f"decision: {_as_text(d)}")
    for r in tool_results:
        if isinstance(r, RoundToolResult):
            label = r.tool_name if r.success else f"{r.tool_name} failed"
            content = r.content if type(r.content) is str else _as_text(r.content)
            parts.append(f"{label}: {content[:TOOL_RESULT_CHARS]}")
        else:
            parts.append(f"result: {_as_text(r)[:TOOL_RESULT_CHARS]}")
    if file_refs:
        parts.append("files: " + ", ".join(str(f) for f in file_refs))
    return clean_text("\n".join(parts))


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, RoundToolResult):
        value = value.to_wire()
    elif hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", exclude_none=True)
    return json.dumps(value, ensure_ascii=False, default=str)


def _jsonable(values: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if type(v) is str:  # (a decision, the model's text: what the round trip gives)
            out.append(clean_text(v))
            continue
        if isinstance(v, RoundToolResult):
            name, content = v.tool_name, v.content
            if type(name) is str and type(content) is str and type(v.success) is bool:
                # already JSON's types: cleaning the strings is all the round trip would do
                # (clean_text's own checks, without its call for the usual clean text)
                if "\x00" in name or not name.isascii():
                    name = clean_text(name)
                if "\x00" in content or not content.isascii():
                    content = clean_text(content)
                out.append({"toolName": name, "success": v.success, "content": content})
                continue
            v = v.to_wire()
        elif hasattr(v, "model_dump"):
            v = v.model_dump(mode="json", exclude_none=True)
        out.append(_clean(json.loads(json.dumps(v, default=str))))
    return out


def _clean(value: Any) -> Any:
    """``value`` with every string storable as PostgreSQL text/jsonb (no NUL, no lone
    surrogate): a tool result may carry them, and the round must still be remembered."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): _clean(v) for k, v in value.items()}
    return value


def round_row(
    *,
    run_id: str,
    round: int,
    context: RunContext,
    file_refs: Sequence[str],
    tool_results: Sequence[Any],
    decisions: Sequence[Any],
    summary: str,
    model: str | None,
    vector: Sequence[float] | None,
    scope: str | None = None,
) -> dict[str, Any]:
    """The RoundMemory row of one round, every string storable. ``scope``: the context's
    :func:`scope_key` when the caller has it (a run's rounds share one)."""
    return {
        "scope_key": scope if scope is not None else scope_key(context),
        "run_id": run_id,
        "workflow_id": context.workflow_id,
        "round": round,
        "user_id": context.user_id,
        "mandate_id": context.mandate_id,
        "feature_instance_id": context.feature_instance_id,
        # (no comprehension or call for the usual empty lists: each is a frame of its own)
        "file_refs": [clean_text(str(f)) for f in file_refs] if file_refs else [],
        "tool_results": _jsonable(tool_results),
        "decisions": _jsonable(decisions) if decisions else [],
        "summary": summary,
        "embedding_model": model if vector is not None else None,
        # (an array('f') of float32 values, as the AI service hands a local model's, is
        # kept: never changed after, and packed for the server as it is)
        "embedding": None if vector is None else vector if type(vector) is array else list(vector),
    }


#: RoundMemory's columns as :func:`round_row` fills them, and their types
ROUND_COLUMNS = (
    "scope_key",
    "run_id",
    "workflow_id",
    "round",
    "user_id",
    "mandate_id",
    "feature_instance_id",
    "file_refs",
    "tool_results",
    "decisions",
    "summary",
    "embedding_model",
    "embedding",
)
ROUND_TYPES = [
    "text",
    "text",
    "text",
    "int4",
    "text",
    "text",
    "text",
    "jsonb",
    "jsonb",
    "jsonb",
    "text",
    "text",
    "vector",
]


#: the rounds as one JSON array of arrays (each a row's values in :data:`ROUND_COLUMNS` order
#: but the vector; its place ``n`` joins it to its vector) and their vectors as one
#: ``vector[]`` (NULL: none), in one statement; its commit does not wait for the disk
#: (``set_config`` local to the statement's own transaction)
_INSERT_ROUNDS = (
    f"WITH written AS (INSERT INTO {RoundMemory.__tablename__}"
    f" ({', '.join(ROUND_COLUMNS)})"
    " SELECT "
    + ", ".join(
        f"(r.v->{i})::jsonb" if t == "jsonb" else f"(r.v->>{i})::{t}"
        for i, t in enumerate(ROUND_TYPES[:-1])
    )
    + ", v.embedding"
    " FROM json_array_elements(%s::json) WITH ORDINALITY AS r(v, n)"
    " JOIN unnest(%s::vector[]) WITH ORDINALITY AS v(embedding, n) ON v.n = r.n"
    " RETURNING 1)"
    " SELECT set_config('synchronous_commit', 'off', true), (SELECT count(*) FROM written)"
)
#: a row's values as :data:`_INSERT_ROUNDS` reads them (a tuple: the JSON holds no keys)
_ROUND_VALUES = itemgetter(*ROUND_COLUMNS[:-1])
_VECTOR_OID = "nyla_vector_oid"


class _Vectors:
    """The vectors of :data:`_INSERT_ROUNDS` (``None``: a round without one) and pgvector's
    type oid on the connection they go to."""

    __slots__ = ("items", "oid")

    def __init__(self, items: list[Any], oid: int) -> None:
        self.items, self.oid = items, oid


class _VectorsDumper(Dumper):
    """A ``vector[]`` parameter in PostgreSQL's binary array form, each element in pgvector's
    binary form (:func:`~nyla.knowledge.vectors.vector_binary`): the driver has no dumper
    for pgvector's type, and the vectors as text cost about 0.3 ms each to render."""

    format = Format.BINARY
    oid = 0  # the statement's cast names the type

    def dump(self, obj: Any) -> bytes:
        items: list[Any] = obj.items
        parts = [_ARRAY_HEADER.pack(1, any(v is None for v in items), obj.oid, len(items), 1)]
        for vector in items:
            if vector is None:
                parts.append(_NULL)
            else:
                body = vector_binary(vector)
                parts.append(_LENGTH.pack(len(body)))
                parts.append(body)
        return b"".join(parts)


_ARRAY_HEADER = struct.Struct(">iiIii")  # dimensions, has nulls, element type, length, base
_LENGTH = struct.Struct(">i")
_NULL = _LENGTH.pack(-1)


async def insert_rounds(db: Database, rows: Sequence[dict[str, Any]]) -> None:
    """Write RoundMemory rows (:func:`round_row`) in one statement on a driver connection of
    the read pool (:meth:`~nyla.db.Database.read_driver`, autocommit: the statement is its
    transaction): the rows as one JSON document, their vectors as one binary ``vector[]``.
    A run's rounds are one write (see :class:`~nyla.knowledge.remembering.RoundBuffer`);
    through a SQLAlchemy session its transaction and COPY were five round trips and about
    4 ms of CPU for 39 rounds (a binary COPY dumps each row's fields in Python).

    Round memory is optional (a run goes on without it), so the commit does not wait for
    the WAL to reach the disk: a server crash may lose the last rounds, never leave a
    half-written one. That wait was 10-30 ms per agent round here. A write sent again after
    a lost connection may store its rounds twice (a reader dedupes by summary)."""
    if not rows:
        return
    # pydantic-core's encoder: the same JSON as json.dumps (compact), a quarter of the time
    # (39 rounds: 0.44 -> 0.12 ms); every string is storable already (round_row). Each row
    # an array, not an object: ~35k -> ~10k instructions a row with its keys written
    document = to_json(list(map(_ROUND_VALUES, rows))).decode()
    vectors = [row["embedding"] for row in rows]

    async def write(conn: Any) -> list[Any]:
        oid = conn.info.get(_VECTOR_OID)
        if oid is None:
            (oid,) = (await conn.rows("SELECT 'vector'::regtype::oid"))[0]
            conn.register_dumper(_Vectors, _VectorsDumper)
            conn.info[_VECTOR_OID] = oid
        return await conn.rows(_INSERT_ROUNDS, (document, _Vectors(vectors, oid)))

    await db.ensure_ready()
    await db.read_driver(write)


async def known_files(session: AsyncSession, context: RunContext, limit: int = 50) -> list[str]:
    """File refs the rounds of this workflow touched, most recent first, distinct."""
    if not context.workflow_id:
        return []
    rows = await session.execute(
        select(RoundMemory.file_refs)
        .where(
            RoundMemory.workflow_id == context.workflow_id,
            RoundMemory.scope_key == scope_key(context),
        )
        .order_by(RoundMemory.id.desc())
        .limit(200)
    )
    seen: list[str] = []
    for (refs,) in rows:
        for ref in refs or []:
            if ref not in seen:
                seen.append(ref)
    return seen[:limit]


async def search_rounds(
    session: AsyncSession,
    context: RunContext,
    *,
    model: str,
    dims: int,
    vector: Sequence[float],
    k: int,
    same_workflow: bool = True,
) -> list[tuple[str, float, str | None]]:
    """(summary, distance, workflow id) of the user's most similar rounds: of this workflow,
    or (``same_workflow=False``) of the user's other workflows (cross-workflow hints)."""
    if same_workflow and not context.workflow_id:
        return []
    where = [
        f"embedding_model = {sql_literal(model)}",
        "scope_key = :scope",
        "embedding IS NOT NULL",
    ]
    params: dict[str, Any] = {"scope": scope_key(context), "q": vector_literal(vector), "k": k}
    if same_workflow:
        where.append("workflow_id = :wf")
        params["wf"] = context.workflow_id
    elif context.workflow_id:
        where.append("(workflow_id IS NULL OR workflow_id <> :wf)")
        params["wf"] = context.workflow_id
    expr = f"{vector_expr(dims)} <=> CAST(:q AS vector({int(dims)}))"
    rows = await session.execute(
        text(
            f"SELECT summary, {expr} AS d, workflow_id FROM knowledge_round_memory "
            f"WHERE {' AND '.join(where)} ORDER BY d LIMIT :k"
        ),
        params,
    )
    return [(r[0], float(r[1]), r[2]) for r in rows]


async def put_workflow_value(
    session: AsyncSession,
    *,
    context: RunContext,
    key: str,
    value: Any,
    kind: str = "entity",
    model: str | None = None,
    vector: Sequence[float] | None = None,
) -> None:
    """Set ``key`` of the context's workflow (insert or replace)."""
    if not context.workflow_id:
        raise ValueError("workflow memory needs a workflow_id in the run context")
    statement = insert(WorkflowMemory).values(
        scope_key=scope_key(context),
        workflow_id=context.workflow_id,
        key=key,
        kind=kind,
        value=json.loads(json.dumps(value, default=str)),
        user_id=context.user_id,
        mandate_id=context.mandate_id,
        embedding_model=model if vector is not None else None,
        embedding=list(vector) if vector is not None else None,
    )
    excluded = statement.excluded
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=["scope_key", "workflow_id", "key"],
            set_={
                "kind": excluded.kind,
                "value": excluded.value,
                "embedding_model": excluded.embedding_model,
                "embedding": excluded.embedding,
                "updated_at": text("now()"),
            },
        )
    )


async def workflow_entries(
    session: AsyncSession, context: RunContext, kind: str | None = None
) -> list[tuple[str, str, Any]]:
    """(key, kind, value) of the context's workflow, newest first."""
    if not context.workflow_id:
        return []
    query = select(WorkflowMemory.key, WorkflowMemory.kind, WorkflowMemory.value).where(
        WorkflowMemory.workflow_id == context.workflow_id,
        WorkflowMemory.scope_key == scope_key(context),
    )
    if kind is not None:
        query = query.where(WorkflowMemory.kind == kind)
    rows = await session.execute(query.order_by(WorkflowMemory.updated_at.desc()))
    return [(r[0], r[1], r[2]) for r in rows]
