"""Search latency of the knowledge store's hybrid search on a larger store: ``--files`` text
files (default 5,000, about three chunks each) made of the sentences of
``bench/retrieval/docs`` shuffled, German and English, then the labelled questions of
``bench/retrieval/questions.tsv`` searched (hybrid and vector only, k=10); mean and p95 in ms.

    .venv/bin/python bench/retrieval_latency.py --files 5000
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import time
import uuid
from pathlib import Path

from nyla.models.knowledge import SearchQuery

HERE = Path(__file__).resolve().parent


def _sentences() -> list[str]:
    found = []
    for path in sorted((HERE / "retrieval" / "docs").glob("*.md")):
        text = " ".join(line for line in path.read_text().splitlines() if not line.startswith("#"))
        found += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) > 4]
    return found


async def main(files: int) -> None:
    from retrieval import questions

    from nyla.db import Database
    from nyla.kernel import Kernel
    from nyla.knowledge.demo import _pick_model
    from nyla.models.agent import RunContext
    from nyla.models.files import FileItem, Scope

    db = Database(schema=f"bench_latency_{uuid.uuid4().hex[:8]}")
    kernel = Kernel(db=db)
    model = _pick_model(kernel)
    if model:
        kernel.knowledge.settings.embedding_model = model
    context = RunContext(user_id="bench", mandate_id="m")
    rng = random.Random(30)
    pool = _sentences()
    items = []
    for i in range(files):
        body = " ".join(rng.choice(pool) for _ in range(rng.randint(20, 60)))
        item = FileItem(id=f"f{i}", name=f"note-{i}.txt", mime_type="text/plain",
                        scope=Scope.PERSONAL, user_id="bench")  # fmt: skip
        items.append((item, body.encode()))
    started = time.perf_counter()
    results = await kernel.knowledge.indexing.index_files(items, context=context)
    chunks = sum(r.chunks for r in results)
    print(f"{files} files, {chunks} chunks indexed in {time.perf_counter() - started:.0f} s")
    for hybrid in (True, False):
        times = []
        for _ in range(3):
            for question, _expected in questions():
                t = time.perf_counter()
                await kernel.knowledge.search(SearchQuery(text=question, context=context, k=10, hybrid=hybrid))  # fmt: skip
                times.append((time.perf_counter() - t) * 1000)
        times = sorted(times[len(questions()) :])  # the first pass warms the caches
        p95 = times[int(0.95 * len(times))]
        label = "hybrid" if hybrid else "vector only"
        print(f"{label}: mean {statistics.mean(times):.1f} ms, p95 {p95:.1f} ms")
    await db.drop_schema()
    await kernel.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    asyncio.run(main(parser.parse_args().files))
