"""Retrieval quality of the knowledge store on a small labelled set, German and English.

    .venv/bin/python bench/retrieval.py                 # hybrid and vector-only, k=10
    .venv/bin/python bench/retrieval.py local:hash-384  # one embedding model only
    PYTHONPATH=/tmp/old/core/src .venv/bin/python bench/retrieval.py   # another checkout

The store holds what ``make demo`` indexes beside each other: the project's ``docs/`` and
README, the demo folder's files (``nyla.walkers.demo.FILES``) and the documents of
``bench/retrieval/docs`` (ten German, five English company documents). The questions of
``bench/retrieval/questions.tsv`` (50, most of them full sentences) were written with their
expected file before any result was seen. For each mode the report gives top-1 (the expected
file is the first hit), recall@10 (it is among the first ten hits' files), MRR and the
mean search latency, for each offline embedder installed (the static WordLlama model, the
default, and the hashing embedder, whose vectors carry no meaning beyond shared words) or the
models named on the command line; the numbers are in docs/knowledge.md.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from nyla.models.knowledge import SearchQuery

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GERMAN_DOCS = {
    "spesenreglement.md", "mehrwertsteuer.md", "ferienregelung.md", "homeoffice.md",
    "rechnungsstellung.md", "it-sicherheit.md", "onboarding.md", "standort-zuerich.md",
    "kundendienst.md", "datenschutz.md",
}  # fmt: skip


def questions() -> list[tuple[str, str]]:
    """(question, expected file name) of the labelled set."""
    out = []
    for line in (HERE / "retrieval" / "questions.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            question, expected = line.split("\t")
            out.append((question.strip(), expected.strip()))
    return out


async def _index(kernel, context, folder: Path, model: str) -> int:
    from nyla.walkers.demo import FILES

    kernel.knowledge.settings.embedding_model = model
    for rel, body in FILES.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(body + "\n", encoding="utf-8")
    paths = [REPO / "docs", REPO / "README.md", HERE / "retrieval" / "docs", folder]
    results = await kernel.knowledge.indexing.index_paths(paths, context=context)
    return sum(1 for r in results if r.status == "indexed")


async def _run_mode(kernel, context, hybrid: bool) -> dict[str, float]:
    from nyla.errors import InvalidQueryError

    top1 = recall = rr = 0.0
    by_language = {"de": [0, 0], "en": [0, 0]}
    times = []
    for question, expected in questions():
        started = time.perf_counter()
        try:
            result = await kernel.knowledge.search(
                SearchQuery(text=question, context=context, k=10, hybrid=hybrid)
            )
            names = [h.file_name for h in result.hits]
        except InvalidQueryError:
            names = []
        times.append(time.perf_counter() - started)
        files = list(dict.fromkeys(names))
        group = by_language["de" if expected in GERMAN_DOCS else "en"]
        group[1] += 1
        if files[:1] == [expected]:
            top1 += 1
            group[0] += 1
        if expected in files:
            recall += 1
            rr += 1.0 / (files.index(expected) + 1)
    n = len(times)
    return {
        "top1": top1 / n,
        "recall10": recall / n,
        "mrr": rr / n,
        "top1_de_docs": by_language["de"][0] / max(by_language["de"][1], 1),
        "top1_en_docs": by_language["en"][0] / max(by_language["en"][1], 1),
        "ms": statistics.mean(times[1:]) * 1000,
    }


async def _bench_model(model: str) -> None:
    from nyla.db import Database
    from nyla.kernel import Kernel
    from nyla.models.agent import RunContext

    db = Database(schema=f"bench_retrieval_{uuid.uuid4().hex[:8]}")
    kernel = Kernel(db=db)
    context = RunContext(user_id="bench", mandate_id="bench-mandate")
    try:
        with tempfile.TemporaryDirectory(prefix="nyla-retrieval-") as folder:
            started = time.perf_counter()
            files = await _index(kernel, context, Path(folder), model)
            took = time.perf_counter() - started
            print(f"\n{model}: {files} files indexed in {took:.1f} s, {len(questions())} "
                  "questions, k=10\n")  # fmt: skip
            print("| mode | top-1 | recall@10 | MRR | top-1 (German docs) | top-1 (English docs) "
                  "| ms per search |")  # fmt: skip
            print("|---|---:|---:|---:|---:|---:|---:|")
            for hybrid in (True, False):
                m = await _run_mode(kernel, context, hybrid)
                print(
                    f"| {'hybrid' if hybrid else 'vector only'} | {m['top1']:.0%} | "
                    f"{m['recall10']:.0%} | {m['mrr']:.2f} | {m['top1_de_docs']:.0%} | "
                    f"{m['top1_en_docs']:.0%} | {m['ms']:.1f} |"
                )
    finally:
        await db.drop_schema()
        await kernel.aclose()


async def main() -> None:
    from nyla.kernel import Kernel
    from nyla.knowledge.demo import LOCAL_EMBEDDERS

    models = sys.argv[1:]
    if not models:
        kernel = Kernel()
        available = {m.id for m in kernel.plugins.models() if m.available}
        await kernel.aclose()
        models = [m for m in LOCAL_EMBEDDERS if m in available]
    for model in models:
        await _bench_model(model)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
