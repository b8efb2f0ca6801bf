"""nDCG@10 and recall@10 of nyla's search and its contenders, German and English questions.

    .venv/bin/python bench/retrieval_ndcg.py [--json /tmp/ndcg.json]

The corpus (82 files): what bench/retrieval.py indexes (the project's ``docs/`` and README,
the demo folder's four files, the fifteen company documents of ``bench/retrieval/docs``) and
the 52 man pages of ``bench/retrieval/ndcg/docs`` (22 commands in German and English, 8 only
in German). ``bench/retrieval/ndcg/questions.tsv`` holds 245 questions (117 German, 213 full
sentences), each with the file(s) that answer it, committed before any system ran on them.

``bench/retrieval/ndcg/tuning.tsv`` holds 85 other questions over the same files, written
the same way before any system ran on them: the set the fusion weight was tuned on
(``--questions tuning``); the evaluation set is never tuned on.

Every system returns, per question, the first ten distinct files of its best chunks; a file
is relevant or not (nDCG with binary gains, ideal = all relevant files first). Each cell
has its 95 % bootstrap interval (2,000 resamples of the group's questions). Systems:

- ``nyla default``: ``kernel.knowledge.search`` (hybrid) with the offline default embedder
  ``local:wordllama-l2-256`` (``NYLA_LOCAL_EMBEDDINGS`` removed from the environment):
  BM25 full text, the vector ranking weighed down for a query in a language the model was
  not trained on;
- ``nyla before``: the same store with the earlier settings (``text_rank="ts_rank"``,
  ``foreign_vector_weight=1``), and the two changes one at a time (``nyla bm25, equal
  fusion``, ``nyla ts_rank, language-aware fusion``);
- ``nyla vector only``: the same store, ``hybrid=False``;
- ``nyla hash``: a second store embedded with ``local:hash-384``, hybrid;
- ``pgvector``: plain SQL (cosine distance, exact) over nyla's chunks and vectors;
- ``bm25s``, ``llamaindex hybrid``, ``llamaindex fusion``: bench/retrieval_contenders.py in
  ``bench/.venvs/ir``, over the same chunks and vectors.

A provider's embeddings (OpenAI, Mistral, ...) cannot run here: the machine has no network.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from retrieval import GERMAN_DOCS  # the company documents written in German

from nyla.models.knowledge import SearchQuery

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
K = 10
CHUNKS_PER_QUERY = 40
STATIC, HASH = "local:wordllama-l2-256", "local:hash-384"
SYSTEMS = ("nyla default", "nyla before", "nyla bm25, equal fusion",
           "nyla ts_rank, language-aware fusion", "nyla vector only", "nyla hash", "pgvector",
           "bm25s", "llamaindex hybrid", "llamaindex fusion")  # fmt: skip
#: nyla's variants on one store: (hybrid, knowledge settings changed for the run)
BEFORE = {"text_rank": "ts_rank", "foreign_vector_weight": 1.0}
VARIANTS: dict[str, tuple[bool, dict[str, Any]]] = {
    " default": (True, {}),
    " before": (True, BEFORE),
    " bm25, equal fusion": (True, {"foreign_vector_weight": 1.0}),
    " ts_rank, language-aware fusion": (True, {"text_rank": "ts_rank"}),
    " vector only": (False, {}),
}
QUESTION_SETS = {"evaluation": "questions.tsv", "tuning": "tuning.tsv"}


def doc_language(name: str) -> str:
    if name.endswith(".de.txt") or name in GERMAN_DOCS:
        return "de"
    return "en"


def questions(which: str = "evaluation") -> list[dict[str, Any]]:
    """The labelled questions: language, form, text, relevant files, cross-language flag."""
    out = []
    path = HERE / "retrieval" / "ndcg" / QUESTION_SETS[which]
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        language, form, text, relevant = line.split("\t")
        files = relevant.split(",")
        cross = all(doc_language(f) != language for f in files)
        out.append({"language": language, "sentence": form == "s", "text": text,
                    "relevant": files, "cross": cross})  # fmt: skip
    return out


def corpus_paths(demo_folder: Path) -> list[Path]:
    from nyla.walkers.demo import FILES

    for rel, body in FILES.items():
        (demo_folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (demo_folder / rel).write_text(body + "\n", encoding="utf-8")
    return [REPO / "docs", REPO / "README.md", HERE / "retrieval" / "docs",
            HERE / "retrieval" / "ndcg" / "docs", demo_folder]  # fmt: skip


# ---- metrics ------------------------------------------------------------------------------


def ndcg(ranked: list[str], relevant: list[str]) -> float:
    gains = sum(1 / math.log2(i + 2) for i, f in enumerate(ranked[:K]) if f in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), K)))
    return gains / ideal


def recall(ranked: list[str], relevant: list[str]) -> float:
    return len(set(ranked[:K]) & set(relevant)) / len(relevant)


GROUPS = {
    "all": lambda q: True,
    "German": lambda q: q["language"] == "de",
    "English": lambda q: q["language"] == "en",
    "full sentence": lambda q: q["sentence"],
    "cross-language": lambda q: q["cross"],
}


def interval(values: list[float], draws: int = 2000) -> tuple[float, float]:
    """The 95 % bootstrap interval of the mean of ``values``."""
    import random

    rng = random.Random(30)
    means = sorted(sum(rng.choices(values, k=len(values))) / len(values) for _ in range(draws))
    return means[int(0.025 * draws)], means[int(0.975 * draws) - 1]


def scores(rankings: list[list[str]], qs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for group, keep in GROUPS.items():
        pairs = [(r, q) for r, q in zip(rankings, qs, strict=True) if keep(q)]
        n = [ndcg(r, q["relevant"]) for r, q in pairs]
        rc = [recall(r, q["relevant"]) for r, q in pairs]
        out[group] = {
            "n": len(pairs),
            "ndcg10": sum(n) / len(n),
            "recall10": sum(rc) / len(rc),
            "ndcg10_ci": interval(n),
            "recall10_ci": interval(rc),
        }
    return out


# ---- nyla ---------------------------------------------------------------------------------


async def nyla_rankings(url: str, paths: list[Path], qs: list[dict[str, Any]],
                        model: str, schema: str) -> dict[str, list[list[str]]]:  # fmt: skip
    from nyla.db import Database
    from nyla.errors import InvalidQueryError
    from nyla.kernel import Kernel
    from nyla.models.agent import RunContext

    kernel = Kernel(db=Database(url, schema=schema), settings={"knowledge": {"embedding_model": model}})  # fmt: skip
    context = RunContext(user_id="bench", mandate_id="bench-mandate")
    try:
        results = await kernel.knowledge.indexing.index_paths(paths, context=context)
        failed = [r.name for r in results if r.status != "indexed"]
        assert not failed, f"not indexed: {failed}"
        prefix = "nyla hash" if model == HASH else "nyla"
        modes = {"": (True, {})} if model == HASH else VARIANTS
        out: dict[str, list[list[str]]] = {}
        settings = kernel.knowledge.settings
        defaults = {key: getattr(settings, key) for key in BEFORE}
        for suffix, (hybrid, changed) in modes.items():
            for key, value in {**defaults, **changed}.items():
                setattr(settings, key, value)
            ranked = []
            for q in qs:
                try:
                    result = await kernel.knowledge.search(
                        SearchQuery(
                            text=q["text"], context=context, k=CHUNKS_PER_QUERY, hybrid=hybrid
                        )
                    )
                    names = [h.file_name for h in result.hits]
                except InvalidQueryError:
                    names = []
                ranked.append(list(dict.fromkeys(names))[:K])
            out[prefix + suffix] = ranked
        return out
    finally:
        await kernel.aclose()


def chunks_of(uri: str, schema: str) -> list[dict[str, Any]]:
    """nyla's chunks of the static model: file name, text and vector."""
    import psycopg

    with psycopg.connect(uri) as conn:
        rows = conn.execute(
            f"SELECT f.name, c.data, c.embedding::text FROM {schema}.knowledge_chunk c "
            f"JOIN {schema}.knowledge_file_index f ON f.file_no = c.id >> 20 "
            "WHERE c.embedding_model = %s ORDER BY c.id",
            (STATIC,),
        ).fetchall()
    return [{"file": n, "text": t, "vector": json.loads(v)} for n, t, v in rows]


def pgvector_rankings(uri: str, schema: str, qs: list[dict[str, Any]]) -> list[list[str]]:
    """Plain SQL: the chunks nearest by cosine distance (exact scan), their files."""
    import psycopg

    from nyla_provider_local.static_model import embed_texts

    vectors = embed_texts([q["text"] for q in qs])
    out = []
    with psycopg.connect(uri) as conn:
        for vector in vectors:
            rows = conn.execute(
                f"SELECT f.name FROM {schema}.knowledge_chunk c "
                f"JOIN {schema}.knowledge_file_index f ON f.file_no = c.id >> 20 "
                "WHERE c.embedding_model = %s ORDER BY c.embedding <=> %s::vector LIMIT %s",
                (STATIC, str(vector), CHUNKS_PER_QUERY),
            ).fetchall()
            out.append(list(dict.fromkeys(r[0] for r in rows))[:K])
    return out


# ---- report -------------------------------------------------------------------------------


def paired(rankings: dict[str, list[list[str]]], qs: list[dict[str, Any]]) -> str:
    """Each system against nyla's default on the full-sentence questions: questions won and
    lost (nDCG@10) and the mean difference with its 95 % bootstrap interval (2,000 draws)."""
    import random

    mine = [i for i, q in enumerate(qs) if q["sentence"]]
    base = [ndcg(rankings["nyla default"][i], qs[i]["relevant"]) for i in mine]
    rows = ["| nyla default vs | better on | worse on | mean nDCG@10 difference (95 % CI) |",
            "|---|---:|---:|---|"]  # fmt: skip
    for system, ranked in rankings.items():
        if system == "nyla default":
            continue
        diffs = [b - ndcg(ranked[i], qs[i]["relevant"]) for b, i in zip(base, mine, strict=True)]
        rng = random.Random(30)
        means = sorted(
            sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(2000)
        )  # fmt: skip
        rows.append(
            f"| {system} | {sum(d > 0 for d in diffs)} | {sum(d < 0 for d in diffs)} | "
            f"{sum(diffs) / len(diffs):+.3f} ({means[50]:+.3f} … {means[1949]:+.3f}) |"
        )
    return "\n".join(rows)


def table(results: dict[str, dict[str, dict[str, Any]]], metric: str = "ndcg10") -> str:
    some = next(iter(results.values()))
    head = " | ".join(f"{g} (n={some[g]['n']})" for g in GROUPS)
    rows = [f"| system | {head} |", "|---|" + "---:|" * len(GROUPS)]
    for system, s in results.items():
        cells = " | ".join(
            f"{s[g][metric]:.3f} ({s[g][metric + '_ci'][0]:.3f}–{s[g][metric + '_ci'][1]:.3f})"
            for g in GROUPS
        )
        rows.append(f"| {system} | {cells} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--questions", choices=sorted(QUESTION_SETS), default="evaluation")
    args = parser.parse_args()
    os.environ.pop("NYLA_LOCAL_EMBEDDINGS", None)
    from ingest import bench_venv

    from nyla.db import to_sqlalchemy_url
    from nyla.embedded import start_embedded

    qs = questions(args.questions)
    python = bench_venv()
    base = Path(tempfile.mkdtemp(prefix="nyla-bench-ndcg-"))
    server = start_embedded(base / "server", cleanup_mode="delete")
    uri = server.get_uri()
    try:
        paths = corpus_paths(base / "demo")
        url = to_sqlalchemy_url(uri)
        rankings = asyncio.run(nyla_rankings(url, paths, qs, STATIC, "ndcg_static"))
        rankings.update(asyncio.run(nyla_rankings(url, paths, qs, HASH, "ndcg_hash")))
        rankings["pgvector"] = pgvector_rankings(uri, "ndcg_static", qs)
        chunks = chunks_of(uri, "ndcg_static")
        handoff, back = base / "in.json", base / "out.json"
        handoff.write_text(json.dumps({"chunks": chunks, "questions": [q["text"] for q in qs],
                                       "uri": uri, "schema": "ndcg_li"}))  # fmt: skip
        subprocess.run([str(python), str(HERE / "retrieval_contenders.py"), str(handoff),
                        str(back)], check=True, cwd=HERE)  # fmt: skip
        rankings.update(json.loads(back.read_text()))
        results = {s: scores(rankings[s], qs) for s in SYSTEMS if s in rankings}
        files = len({c["file"] for c in chunks})
        print(f"\n{args.questions} set: {len(qs)} questions, {files} files, {len(chunks)} "
              f"chunks; load {os.getloadavg()[0]:.1f}\n\nnDCG@10 (95 % interval)\n")  # fmt: skip
        print(table(results))
        print("\nrecall@10 (95 % interval)\n")
        print(table(results, "recall10"))
        print(f"\nfull-sentence questions (n={sum(q['sentence'] for q in qs)}):\n")
        print(paired({s: rankings[s] for s in SYSTEMS if s in rankings}, qs))
        if args.json:
            args.json.write_text(json.dumps({"scores": results, "rankings": rankings,
                                             "questions": qs}, indent=1))  # fmt: skip
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
