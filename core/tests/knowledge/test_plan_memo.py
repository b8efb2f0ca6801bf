"""The plan an unfiltered search keeps (nyla.knowledge.search_plan.EstimateCache.plan):
never older than the counts it was made from, forgotten when any count changes."""

from __future__ import annotations

import pytest

from nyla.knowledge import search_plan
from nyla.knowledge.search_plan import EstimateCache


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(search_plan.time, "monotonic", lambda: now[0])
    return now


def test_a_plan_lives_as_long_as_the_oldest_count_it_used(clock: list[float]) -> None:
    cache = EstimateCache(ttl=30.0)
    cache.put(("total",), 10_000)
    clock[0] += 20
    cache.put(("scope", "keys"), (100, 10, 500))
    cache.keep_plan("plan", "hnsw", (("total",), ("scope", "keys")))
    clock[0] += 9
    assert cache.plan("plan") == "hnsw"
    # the table's count (put first) expires at 1030: the plan with it, not at 1050
    clock[0] += 2
    assert cache.get(("total",)) is None
    assert cache.plan("plan") is None


def test_any_new_count_forgets_every_plan(clock: list[float]) -> None:
    cache = EstimateCache()
    cache.put(("total",), 10_000)
    cache.keep_plan("a", "exact", (("total",),))
    assert cache.plan("a") == "exact"
    cache.put(("other",), 1)
    assert cache.plan("a") is None
    cache.keep_plan("a", "exact", (("total",),))
    cache.clear()
    assert cache.plan("a") is None


def test_no_plan_is_kept_without_its_counts(clock: list[float]) -> None:
    cache = EstimateCache()
    cache.put(("total",), 10_000)
    cache.keep_plan("a", "hnsw", (("total",), ("never counted",)))
    assert cache.plan("a") is None
