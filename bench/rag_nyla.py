"""nyla in bench/rag.py, through its public API only.

Ingest is what ``nyla knowledge index DIR --scope S`` runs:
:meth:`KnowledgeService.index_paths` on a directory of text files, one passage per file, fed
the corpus' precomputed all-MiniLM-L6-v2 vectors with ``embeddings=PrecomputedEmbeddings``.
It returns when the files are searchable by every path (chunks, lookup rows for full text
and dedupe, the HNSW index, fresh planner statistics). Three calls, one per scope, the
largest first: the bench's owner groups map onto scopes (group 0 -> the reader's personal
files, 1..9 -> the feature instance, 10..99 -> the mandate), so the 1 % and 10 % filters
are nyla's own scope selection (``scopes=``) over the same rows the contenders filter by
metadata. Queries go through :meth:`KnowledgeService.search_vector` (the query vector
precomputed, ``hybrid=False``: vector search as the contenders do).
"""

from __future__ import annotations

import re
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

from nyla.models.knowledge import SearchQuery

MODEL = "bench:all-minilm-l6-v2"
K = 10
SCOPE_OF_GROUP = {0: "personal", **{g: "featureInstance" for g in range(1, 10)}}
FILTER_SCOPES: dict[str, list[str] | None] = {
    "unfiltered": None,
    "1%": ["personal"],
    "10%": ["personal", "featureInstance"],
}
_DOC = re.compile(r"doc-(\d+)\.txt")


def scope_of(i: int, users: int) -> str:
    """The scope of passage ``i`` (its owner group is ``i % users``)."""
    return SCOPE_OF_GROUP.get(i % users, "mandate")


def write_tree(root: Path, texts: list[str], users: int) -> dict[str, Path]:
    """One text file per passage under ``root/<scope>/``; the directory of each scope."""
    dirs = {s: root / s for s in ("mandate", "featureInstance", "personal")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    for i, body in enumerate(texts):
        (dirs[scope_of(i, users)] / f"doc-{i}.txt").write_text(body, encoding="utf-8")
    return dirs


async def ingest(kernel: Any, texts: list[str], docs: list[array], users: int) -> dict[str, Any]:
    """Index the corpus the way ``nyla knowledge index`` does; seconds until searchable."""
    from nyla import PrecomputedEmbeddings
    from nyla.models.agent import RunContext

    context = RunContext(user_id="reader", mandate_id="m", feature_instance_id="inst")
    embeddings = PrecomputedEmbeddings(MODEL, zip(texts, docs, strict=True))
    out: dict[str, Any] = {"name": "nyla", "steps": {}}
    with tempfile.TemporaryDirectory(prefix="nyla-bench-") as tmp:
        dirs = write_tree(Path(tmp), texts, users)
        started = time.perf_counter()
        failed: list[str] = []
        for scope, directory in dirs.items():
            step = time.perf_counter()
            results = await kernel.knowledge.indexing.index_paths(
                [directory], context=context, scope=scope, embeddings=embeddings
            )
            failed += [f"{r.name}: {r.error}" for r in results if r.status != "indexed"]
            out["steps"][f"index_paths {scope}"] = time.perf_counter() - step
        out["ingest_s"] = time.perf_counter() - started
    if failed:
        raise SystemExit(f"nyla failed {len(failed)} files, e.g. {failed[0]}")
    return out


async def queries(
    kernel: Any, vectors: list[array], setting: str, ef_search: int
) -> list[tuple[float, list[int]]]:
    """(latency ms, passage ids) per query through ``search_vector`` at ``ef_search``
    (the auto path choice stays: a small scope is ranked exactly), after one untimed pass."""
    from nyla.models.agent import RunContext

    settings = kernel.knowledge.settings
    settings.ef_search = ef_search
    settings.adaptive_ef_search = False
    context = RunContext(user_id="reader", mandate_id="m", feature_instance_id="inst")
    scopes = FILTER_SCOPES[setting]

    async def one(vec: array) -> list[int]:
        result = await kernel.knowledge.search(
            SearchQuery(
                text="",
                vector=vec.tolist(),
                model=MODEL,
                context=context,
                scopes=scopes,
                k=K,
                hybrid=False,
            )
        )
        return [int(_DOC.fullmatch(h.file_name)[1]) for h in result.hits]  # type: ignore[index]

    for vec in vectors:
        await one(vec)
    out = []
    for vec in vectors:
        started = time.perf_counter()
        ids = await one(vec)
        out.append(((time.perf_counter() - started) * 1000, ids))
    return out
