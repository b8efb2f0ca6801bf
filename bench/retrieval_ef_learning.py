"""Can a scope's ``ef_search`` be learned from a reader's queries without trading recall on
the queries it has not seen? (issue 32 goal 2, the 10 % scope of bench/retrieval_latency.py)

    env -u NYLA_LOCAL_EMBEDDINGS .venv/bin/python bench/retrieval_latency.py --n 1000000 --rounds 1
    env -u NYLA_LOCAL_EMBEDDINGS .venv/bin/python bench/retrieval_ef_learning.py --n 1000000

Needs the database bench/retrieval_latency.py built at that size (bench/.cache/pgdata). Every
query's exact top 10 in the scope is computed here (numpy); then the iterative HNSW scan on
nyla's index (``hnsw.iterative_scan = relaxed_order``, raw pgvector's statement of
bench/retrieval_latency.py) is run at each ``--efs`` for three sets of queries from the same
generator: the bench's 100 timed queries, its 100 warm-up queries, and ``--more`` others.
It prints each set's recall at each ef, how many queries lose how many hits against the
largest ef (the rule's, 631 at 10 % of 1M), and what rules that learn an ef from 100 of a
reader's queries would learn: from the bench's warm-up set, and from random rings of 100 of
the untimed queries, each scored on the timed queries against raw pgvector's ef 400 (the
recall a learned ef must not fall below) and on the untimed queries left out of the ring.

The rules (all pick, where no ef reaches 0.95, among the doubling ladder 10, 20, ... up to
the largest ef, the last step narrowed by three geometric halvings, as
nyla.knowledge.search_calibration's ladder does):

- ``plateau``: the smallest ef whose per-query differences from the best ef's have a mean
  no larger than its standard error (the rule of 4775e33, taken back in e8b3eed);
- ``split``: ``plateau`` learned on one half of the ring, kept only if the other half loses
  no hit against its own best ef, else the largest ef;
- ``split both``: ``split`` each way round, the larger of the two;
- ``bound``: the smallest ladder ef at which a crude upper bound on the recall lost against
  the largest ef is at most ``--delta`` (losing queries plus 3, over the ring, times the
  most hits one of them lost, over k; k when none lost: a rare query's loss is not known).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import sys
from collections import Counter
from collections.abc import Callable

import retrieval_latency as rl

#: recall@k's target (a learned ef reaching it needs no plateau)
TARGET = 0.95
#: the queries of a ring, as nyla's reverted ring kept
RING = 100
#: the raw plan a learned ef must not fall below (the bench's comparison)
FLOOR_EF = 400

#: per set, per ef: the hits of each query's exact top k found
Found = dict[str, dict[int, list[int]]]
Query = tuple[str, int]


async def measure(n: int, efs: list[int], more: int) -> Found:
    import psycopg
    from pgvector.psycopg import register_vector_async
    from rag import db_uri, start_server

    docs, timed, _, warm = rl.corpus(n, 100)
    extra = rl.corpus(n, 100 + more)[1][100:]  # the same centers, other draws
    scopes, keys = rl.SCOPED["10%"]
    rows = rl.owner_rows(n, scopes)
    sets = {"timed": timed, "warm": warm, "more": extra}
    truths = {name: rl.truth(docs, qs, rows) for name, qs in sets.items()}
    del docs
    _, base = start_server()
    conn = await psycopg.AsyncConnection.connect(db_uri(base, f"nyla_latency_{n}"), autocommit=True)
    await register_vector_async(conn)
    raw = rl.Raw(conn, await rl.doc_numbers(conn))
    found: Found = {name: {} for name in sets}
    for ef in efs:
        await raw.set(ef, iterative=True)
        for name, qs in sets.items():
            found[name][ef] = [
                len(best.intersection(await raw.hnsw(q.tolist(), keys)))
                for q, best in zip(qs, truths[name], strict=True)
            ]
        print(f"# ef {ef} measured", file=sys.stderr, flush=True)
    await conn.close()
    return found


class Rules:
    """The rules of the module's docstring over measured hits (an ef between two measured
    ones counts as the lower one)."""

    def __init__(self, found: Found, k: int = rl.K, delta: float = 0.002) -> None:
        self.found, self.k, self.delta = found, k, delta
        self.top = max(found["timed"])

    def hits(self, q: Query, ef: int) -> int:
        measured = self.found[q[0]]
        return measured[max(e for e in measured if e <= ef)][q[1]]

    def recall(self, qs: list[Query], ef: int) -> float:
        return sum(self.hits(q, ef) for q in qs) / self.k / len(qs)

    def ladder(self) -> list[int]:
        efs, ef = [], max(self.k, 10)
        while ef < self.top:
            efs.append(ef)
            ef *= 2
        return [*efs, self.top]

    def _narrowed(self, good: Callable[[int], bool], low: int | None, high: int) -> int:
        for _ in range(3):
            mid = 0 if low is None else round(math.sqrt(low * high))
            if low is None or not low < mid < high:
                break
            low, high = (low, mid) if good(mid) else (mid, high)
        return high

    def plateau(self, qs: list[Query]) -> int:
        def at(ef: int) -> list[int]:
            return [self.hits(q, ef) for q in qs]

        def reaches(ef: int) -> bool:
            return sum(at(ef)) >= math.ceil(TARGET * len(qs) * self.k)

        def flat(ef: int) -> bool:
            d = [b - f for b, f in zip(best, at(ef), strict=True)]
            return sum(d) <= 0 or sum(d) ** 2 <= sum(x * x for x in d)

        efs = self.ladder()
        for i, ef in enumerate(efs):
            if reaches(ef):
                return self._narrowed(reaches, efs[i - 1] if i else None, ef)
        best = max((at(ef) for ef in efs), key=sum)
        i = next(i for i, ef in enumerate(efs) if flat(ef))
        return self._narrowed(flat, efs[i - 1] if i else None, efs[i])

    def split(self, qs: list[Query], halves: tuple[list[Query], list[Query]] | None = None) -> int:
        learn, check = halves or (qs[0::2], qs[1::2])
        ef = self.plateau(learn)
        best = max(self.ladder(), key=lambda e: self.recall(check, e))
        keep = all(self.hits(q, ef) >= self.hits(q, best) for q in check)
        return ef if keep else self.top

    def split_both(self, qs: list[Query]) -> int:
        a, b = qs[0::2], qs[1::2]
        return max(self.split(qs, (a, b)), self.split(qs, (b, a)))

    def bound(self, qs: list[Query]) -> int:
        for ef in self.ladder():
            lost = [max(0, self.hits(q, self.top) - self.hits(q, ef)) for q in qs]
            losing = sum(1 for x in lost if x)
            worst = max(lost) if losing else self.k  # none lost: how much is not known
            if (losing + 3) / len(qs) * worst / self.k <= self.delta:
                return ef
        return self.top


def report(found: Found, draws: int, seed: int, delta: float) -> None:
    rules = Rules(found, delta=delta)
    sets = {name: [(name, i) for i in range(len(found[name][rules.top]))] for name in found}
    timed, untimed = sets["timed"], sets["warm"] + sets["more"]
    print("## Recall@10 of the iterative scan at each ef_search (10 % scope)")
    print("| queries | " + " | ".join(f"ef {e}" for e in found["timed"]) + " |")
    print("|---|" + "---|" * len(found["timed"]))
    for name, qs in sets.items():
        row = " | ".join(f"{rules.recall(qs, e):.3f}" for e in found[name])
        print(f"| {name} ({len(qs)}) | {row} |")
    print(f"\n## Queries losing hits against ef {rules.top} (queries / hits lost / most by one)")
    for name, qs in sets.items():
        cells = []
        for e in found[name]:
            lost = [max(0, rules.hits(q, rules.top) - rules.hits(q, e)) for q in qs]
            cells.append(f"{e}: {sum(1 for x in lost if x)}/{sum(lost)}/{max(lost)}")
        print(f"- {name}: " + ", ".join(cells))
    floor = rules.recall(timed, FLOOR_EF)
    print(f"\n## Learned from {RING} queries; timed recall floor: raw ef {FLOOR_EF}'s {floor:.3f}")
    print(
        "| rule | from the warm-up set: ef (timed recall) | rings: efs learned "
        "| below the floor | timed recall, mean | untimed left out: recall vs the largest ef |"
    )
    print("|---|---|---|---|---|---|")
    for name, rule in (("plateau", rules.plateau), ("split", rules.split),
                       ("split both", rules.split_both), ("bound", rules.bound)):  # fmt: skip
        learned = rule(sets["warm"])
        random.seed(seed)
        rings = [random.sample(untimed, RING) for _ in range(draws)]
        efs = [rule(ring) for ring in rings]
        below = sum(1 for e in efs if rules.recall(timed, e) < floor - 1e-9)
        lost = [
            rules.recall(rest, e) - rules.recall(rest, rules.top)
            for ring, e in zip(rings, efs, strict=True)
            for rest in [[q for q in untimed if q not in set(ring)]]
        ]
        print(f"| {name} | {learned} ({rules.recall(timed, learned):.3f}) "
              f"| {dict(sorted(Counter(efs).items()))} | {below}/{draws} "
              f"| {statistics.fmean(rules.recall(timed, e) for e in efs):.3f} "
              f"| {statistics.fmean(lost):+.4f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument(
        "--efs", default="10,20,28,40,57,80,95,113,134,160,190,226,269,320,380,400,449,532,631"
    )
    parser.add_argument("--more", type=int, default=200, help="untimed queries besides the warm-up")
    parser.add_argument("--draws", type=int, default=300, help="random rings per rule")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--delta", type=float, default=0.002, help="the bound rule's recall")
    args = parser.parse_args()
    efs = sorted(int(e) for e in args.efs.split(","))
    found = asyncio.run(measure(args.n, efs, args.more))
    print(f"# n={args.n}, 10 % scope, load {rl.load()}")
    report(found, args.draws, args.seed, args.delta)


if __name__ == "__main__":
    main()
