"""Latency of hybrid search's full-text half on a store of common words: ``--files`` text
files (default 5,000, about three chunks each) made of the sentences of
``bench/retrieval/docs`` shuffled, German and English, so every question word is in
thousands of chunks (the worst case for full text); the 50 questions of
``bench/retrieval/questions.tsv`` searched with k=10.

    env -u NYLA_LOCAL_EMBEDDINGS .venv/bin/python bench/retrieval_hybrid_latency.py --files 5000

Side by side on one store, question by question in alternating order: hybrid search with
BM25 full text (``text_rank="bm25"``, the default), with the earlier ``idf * ts_rank``
(``text_rank="ts_rank"``), vector only, and (``--rerank``) BM25 hybrid followed by a rerank
through the AI service against a provider faked at the wire (see bench/retrieval_rerank.py:
the added cost of nyla's side of a rerank, not a model's). Wall and this process's CPU per
search, mean and p95, after an untimed pass; the load before and after. An embedded
PostgreSQL in a temporary directory, the offline default embedder.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def sentences() -> list[str]:
    found = []
    for path in sorted((HERE / "retrieval" / "docs").glob("*.md")):
        text = " ".join(line for line in path.read_text().splitlines() if not line.startswith("#"))
        found += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) > 4]
    return found


async def run(url: str, files: int, rounds: int, rerank: bool) -> None:
    from retrieval import questions

    from nyla.db import Database
    from nyla.kernel import Kernel
    from nyla.models.agent import RunContext
    from nyla.models.files import FileItem, Scope
    from nyla.models.knowledge import SearchQuery

    kernel = Kernel(db=Database(url, schema="hybrid_latency"))
    if rerank:
        from retrieval_rerank import install_fake_reranker

        install_fake_reranker(kernel)
    context = RunContext(user_id="bench", mandate_id="m")
    rng = random.Random(30)
    pool = sentences()
    items = []
    for i in range(files):
        body = " ".join(rng.choice(pool) for _ in range(rng.randint(20, 60)))
        item = FileItem(id=f"f{i}", name=f"note-{i}.txt", mime_type="text/plain",
                        scope=Scope.PERSONAL, user_id="bench")  # fmt: skip
        items.append((item, body.encode()))
    started = time.perf_counter()
    results = await kernel.knowledge.indexing.index_files(items, context=context)
    print(f"{files} files, {sum(r.chunks for r in results)} chunks indexed in "
          f"{time.perf_counter() - started:.0f} s ({kernel.knowledge.settings.embedding_model or 'default model'})")  # fmt: skip
    settings = kernel.knowledge.settings
    modes: dict[str, tuple[bool, dict[str, Any]]] = {
        "hybrid, BM25 (default)": (True, {"text_rank": "bm25", "rerank": False}),
        "hybrid, idf * ts_rank (before)": (True, {"text_rank": "ts_rank", "rerank": False}),
        "vector only": (False, {"text_rank": "bm25", "rerank": False}),
    }
    if rerank:
        modes["hybrid, BM25 + rerank (faked provider)"] = (True, {"text_rank": "bm25",
                                                                   "rerank": True})  # fmt: skip
    wall: dict[str, list[float]] = {m: [] for m in modes}
    cpu: dict[str, list[float]] = {m: [] for m in modes}
    texts = [q for q, _ in questions()]
    load = os.getloadavg()[0]
    for round_no in range(rounds + 1):
        for i, text in enumerate(texts):
            order = list(modes.items())
            if (i + round_no) % 2:
                order.reverse()
            for name, (hybrid, changed) in order:
                for key, value in changed.items():
                    if hasattr(settings, key):
                        setattr(settings, key, value)
                t, c = time.perf_counter(), time.process_time()
                await kernel.knowledge.search(
                    SearchQuery(text=text, context=context, k=10, hybrid=hybrid)
                )
                if round_no:  # the first round warms the caches
                    wall[name].append((time.perf_counter() - t) * 1000)
                    cpu[name].append((time.process_time() - c) * 1000)
    print(f"load {load:.1f} before, {os.getloadavg()[0]:.1f} after; {rounds} rounds of "
          f"{len(texts)} questions, alternating\n")  # fmt: skip
    print("| search | wall mean | wall p95 | client CPU mean |")
    print("|---|---:|---:|---:|")
    for name in modes:
        times = sorted(wall[name])
        print(f"| {name} | {statistics.mean(times):.1f} ms | "
              f"{times[int(0.95 * len(times))]:.1f} ms | {statistics.mean(cpu[name]):.1f} ms |")  # fmt: skip
    await kernel.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rerank", action="store_true")
    args = parser.parse_args()
    os.environ.pop("NYLA_LOCAL_EMBEDDINGS", None)
    from nyla.db import to_sqlalchemy_url
    from nyla.embedded import start_embedded

    base = Path(tempfile.mkdtemp(prefix="nyla-bench-hybrid-"))
    server = start_embedded(base / "server", cleanup_mode="delete")
    try:
        asyncio.run(run(to_sqlalchemy_url(server.get_uri()), args.files, args.rounds, args.rerank))
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
