"""The scoped part of bench/retrieval_latency.py: nyla's scoped searches against the best
plan PostgreSQL can be given for the same filter, compared at equal recall.

Each raw plan is timed against nyla in the same alternating blocks: an exact scan (a plain
copy of the rows with a btree on the owner, recall 1.0) and an iterative HNSW scan on
nyla's index at rising ``ef_search`` (``hnsw.iterative_scan = relaxed_order``), swept until
it reaches the target recall and nyla's own. Two comparisons follow from them, recall
printed on both sides:

- **at the target recall** (0.95): the raw plan with the least CPU of those reaching it,
  against nyla at the smallest ``ef_search`` setting reaching it (swept as raw's is: the
  setting a user of either would lower to what their data needs; nyla still chooses its
  path and scales the setting under the filter from its statistics);
- **at nyla's recall with its defaults**: the raw plan with the least CPU of those
  reaching at least the recall nyla's defaults give, against nyla at its defaults.

Under a filter nyla runs HNSW at the ``ef_search`` it learned for the scope from the
index (nyla/knowledge/search_calibration.py: measured in the background after the scope's
first search, on the scope's own chunks as queries); each block waits for that to finish
after its warm-up pass, so no timed round carries it. The warm-up passes use 100 other
queries from the same generator as the timed ones, so that anything learned from queries is
learned out of sample, as a user's would be.
"""

from __future__ import annotations

from typing import Any

import retrieval_latency as rl

#: recall equal within the sampling of 100 queries x 10 hits (one hit in 1,000)
SAME_RECALL = 0.001


class Row:
    """One alternating block: a raw plan against nyla at one setting."""

    def __init__(self, plan: str, ef: int | None, pair: tuple[Any, ...], exact: Any) -> None:
        t_raw, t_nyla, f_raw, f_nyla = pair
        self.plan, self.ef, self.t_raw, self.t_nyla = plan, ef, t_raw, t_nyla
        self.recall_raw = rl.recall(f_raw, exact)
        self.recall_nyla = rl.recall(f_nyla, exact)
        self.nyla_ef: int | None = None  # nyla's ef_search setting when swept
        self.paths: set[str] = set()
        self.load = ""

    def ratio(self) -> float:
        return rl._total(self.t_nyla) / rl._total(self.t_raw)

    def line(self, label: str, mark: str = "") -> str:
        rw, nw = self.t_raw.median()[0], self.t_nyla.median()[0]
        nyla = "defaults" if self.nyla_ef is None else f"ef_search {self.nyla_ef}"
        return (
            f"| {label} | {self.plan}{mark} | {self.ef or '-'} | {nyla} "
            f"| {self.recall_raw:.3f} / {self.recall_nyla:.3f} | {rw:.3f} | {nw:.3f} "
            f"| {nw / rw:.2f}x | {rl._cpu(self.t_raw)} | {rl._cpu(self.t_nyla)} "
            f"| {self.ratio():.2f}x | {'/'.join(sorted(self.paths))} | {self.load} |"
        )


async def scoped(
    raw: Any, nyla: Any, paths: list[str], knowledge: Any, queries: tuple[list[Any], list[Any]],
    docs: Any,
    qs: Any, n: int, rounds: int, efs: tuple[int, ...],
) -> None:  # fmt: skip
    """Print the scoped comparison of every scope in :data:`retrieval_latency.SCOPED`
    (``queries``: the timed ones and the warm-up's)."""
    qvecs, warm = queries
    print("\n## Scoped: nyla (its own path choice) against each plan for the same filter")
    print("| scope | raw plan | raw ef_search | nyla | recall raw / nyla | raw wall | nyla wall "
          "| wall ratio | raw CPU | nyla CPU | CPU ratio | nyla path | load |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    summary = []
    for label, (scopes, keys) in rl.SCOPED.items():
        exact = rl.truth(docs, qs, rl.owner_rows(n, scopes))

        async def block(
            fn: Any, plan: str, ef: int | None, keys: Any = keys, scopes: Any = scopes,
            exact: Any = exact,
        ) -> Row:  # fmt: skip
            await rl._pair(fn, nyla, warm, keys, scopes, 1)  # warm: prepare, read pages
            # the scope's ef_search, measured in the background after its first search
            # (nyla.knowledge.search_calibration), settled before the timed rounds
            await knowledge.retrieval.calibrated()
            before = rl.load()
            paths.clear()
            row = Row(plan, ef, await rl._pair(fn, nyla, qvecs, keys, scopes, rounds), exact)
            row.paths, row.load = set(paths), f"{before} -> {rl.load()}"
            return row

        rows = [await block(raw.exact, "exact scan", None)]
        wanted = max(rl.TARGET, rows[0].recall_nyla - SAME_RECALL)
        for ef in efs:
            await raw.set(ef, iterative=True)
            rows.append(await block(raw.hnsw, "iterative HNSW", ef))
            if rows[-1].recall_raw >= wanted:
                break
        best = min((r for r in rows if r.recall_raw >= rl.TARGET), key=lambda r: rl._total(r.t_raw))
        same = [r for r in rows if r.recall_raw >= rows[0].recall_nyla - SAME_RECALL]
        at_default = min(same, key=lambda r: rl._total(r.t_raw))  # the exact scan at least
        swept = await _sweep_nyla(knowledge, raw, best, block, efs)
        for row in rows:
            print(row.line(label, " **best at 0.95**" if row is best else ""))
        for row in swept:
            print(row.line(label))
        summary.append((label, best, at_default, swept))
    _summary(summary)


async def _sweep_nyla(knowledge: Any, raw: Any, best: Row, block: Any, efs: Any) -> list[Row]:
    """nyla at rising ``ef_search`` settings against ``best`` until it reaches the target
    recall (one block when it ranks exactly: the setting does not apply)."""
    swept = []
    fn = raw.exact if best.ef is None else raw.hnsw
    if best.ef is not None:
        await raw.set(best.ef, iterative=True)
    try:
        for ef in efs:
            knowledge.settings.ef_search = ef
            row = await block(fn, best.plan, best.ef)
            row.nyla_ef = ef
            swept.append(row)
            if row.recall_nyla >= rl.TARGET or row.paths == {"exact"}:
                break
    finally:
        knowledge.settings.ef_search = 100
    return swept


def _summary(summary: list[Any]) -> None:
    print("\n### Scoped, at equal recall (CPU ratio: client + server; wall ratio of medians)")
    print(
        "| scope | comparison | raw plan (recall) | nyla (recall, path) | CPU ratio | wall ratio |"
    )
    print("|---|---|---|---|---|---|")
    for label, best, at_default, swept in summary:
        nyla = next((r for r in swept if r.recall_nyla >= rl.TARGET), swept[-1])
        short = "" if nyla.recall_nyla >= rl.TARGET else f"; no swept setting reaches {rl.TARGET}"
        print(f"| {label} | target recall {rl.TARGET} | {_plan(best)} ({best.recall_raw:.3f}) "
              f"| ef_search {nyla.nyla_ef} ({nyla.recall_nyla:.3f}, {'/'.join(sorted(nyla.paths))}"
              f"{short}) "
              f"| **{nyla.ratio():.2f}x** | {_wall(nyla):.2f}x |")  # fmt: skip
        print(f"| {label} | nyla's defaults' recall | {_plan(at_default)} "
              f"({at_default.recall_raw:.3f}) | defaults ({at_default.recall_nyla:.3f}, "
              f"{'/'.join(sorted(at_default.paths))}) | **{at_default.ratio():.2f}x** "
              f"| {_wall(at_default):.2f}x |")  # fmt: skip


def _plan(row: Row) -> str:
    return row.plan if row.ef is None else f"{row.plan} ef {row.ef}"


def _wall(row: Row) -> float:
    return row.t_nyla.median()[0] / row.t_raw.median()[0]
