"""Move the knowledge store to another embedding model: every chunk, round summary and
workflow memory entry embedded with a different model is embedded again with the new one.

Search compares vectors of one model only, so after the default model changes the old rows
are found by full text alone until they are moved. Each batch is re-embedded and written in
its own transaction with its rows locked (``FOR UPDATE SKIP LOCKED``): a run killed half-way
leaves every row whole (old model or new, never a mix within a row) and the next run goes on
from there; two runs at once split the rows between them."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import bindparam, text

from nyla.models.knowledge import ReindexResult

#: table -> the columns its embedded text is made of, and how (as the writers embed it)
TARGETS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "knowledge_chunk": ("data", lambda r: str(r.data or "")),
    "knowledge_round_memory": ("summary", lambda r: str(r.summary or "")),
    "knowledge_workflow_memory": ("key, value", lambda r: f"{r.key}: {r.value}"),
}
BATCH = 256

ProgressFn = Callable[[int, int], None]


@dataclass
class _Batch:
    table: str
    ids: list[int]
    texts: list[str]


async def _pending(db: Any, model: str) -> int:
    async with db.session() as s:
        total = 0
        for table in TARGETS:
            total += int(
                (
                    await s.execute(
                        text(
                            f"SELECT count(*) FROM {table} WHERE embedding IS NOT NULL "
                            "AND embedding_model IS DISTINCT FROM :m"
                        ),
                        {"m": model},
                    )
                ).scalar_one()
            )
        return total


async def _take(s: Any, table: str, model: str, size: int) -> _Batch | None:
    rows = (
        await s.execute(
            text(
                f"SELECT id, {TARGETS[table][0]} FROM {table} "
                "WHERE embedding IS NOT NULL AND embedding_model IS DISTINCT FROM :m "
                "ORDER BY id LIMIT :n FOR UPDATE SKIP LOCKED"
            ),
            {"m": model, "n": size},
        )
    ).all()
    if not rows:
        return None
    body = TARGETS[table][1]
    return _Batch(table, [int(r.id) for r in rows], [body(r) for r in rows])


async def _write(s: Any, batch: _Batch, model: str, vectors: list[list[float]]) -> None:
    statement = text(
        f"UPDATE {batch.table} SET embedding = :vector, embedding_model = :m WHERE id = :id"
    ).bindparams(bindparam("vector", type_=Vector()))
    await s.execute(
        statement,
        [
            {"vector": vector, "m": model, "id": row_id}
            for row_id, vector in zip(batch.ids, vectors, strict=True)
        ],
    )


async def _mark_files(s: Any, model: str) -> int:
    """File rows whose chunks are all on ``model`` now say so (the dedupe of later indexing
    reuses vectors of the file's model only)."""
    from nyla.knowledge.vectors import CHUNK_ID_BITS

    result = await s.execute(
        text(
            "UPDATE knowledge_file_index f SET embedding_model = :m "
            "WHERE f.embedding_model IS DISTINCT FROM :m AND f.chunk_count > 0 "
            "AND NOT EXISTS (SELECT 1 FROM knowledge_chunk c "
            f"WHERE c.id >= (f.file_no::bigint << {CHUNK_ID_BITS}) "
            f"AND c.id < ((f.file_no::bigint + 1) << {CHUNK_ID_BITS}) "
            "AND c.embedding_model IS DISTINCT FROM :m)"
        ),
        {"m": model},
    )
    return int(result.rowcount or 0)


async def reindex(
    db: Any,
    ai: Any,
    model: str,
    *,
    on_progress: ProgressFn | None = None,
    batch_size: int = BATCH,
) -> ReindexResult:
    """Embed every row of another model again with ``model``; returns what moved."""
    started = time.perf_counter()
    total = await _pending(db, model)
    done, dims = 0, 0
    if on_progress:
        on_progress(0, total)
    for table in TARGETS:
        while True:
            async with db.session() as s:
                batch = await _take(s, table, model, batch_size)
                if batch is None:
                    break
                response = await ai.embed(batch.texts, model=model)
                dims = response.dimensions or dims
                await _write(s, batch, model, response.vectors)
            done += len(batch.ids)
            if on_progress:
                on_progress(done, max(total, done))
    async with db.session() as s:
        files = await _mark_files(s, model)
    return ReindexResult(
        model=model,
        dimensions=dims,
        rows=done,
        files=files,
        seconds=round(time.perf_counter() - started, 3),
    )
