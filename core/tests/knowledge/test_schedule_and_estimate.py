"""The re-sync interval's configuration, how a sync's limits are narrowed by its caller, and
the cost estimate sized by what a source holds and priced by the embedding model."""

from __future__ import annotations

import pytest

from nyla.knowledge.cost import Held, estimate_cost
from nyla.knowledge.limits import FILES_LIMITS_DEFAULT, MB
from nyla.walkers.runner import narrowed
from nyla.walkers.schedule import ScheduleConfigError, resync_interval


def test_the_resync_interval_defaults_to_an_hour_and_refuses_what_is_no_duration(monkeypatch):
    monkeypatch.delenv("NYLA_RESYNC_INTERVAL", raising=False)
    assert resync_interval() == 3600
    monkeypatch.setenv("NYLA_RESYNC_INTERVAL", "120")
    assert resync_interval() == 120
    assert resync_interval({"resync_interval": 5}) == 5  # the kernel setting wins
    monkeypatch.setenv("NYLA_RESYNC_INTERVAL", "0")
    assert resync_interval() == 0  # off
    for bad in ("soon", "-5", "nan", "inf"):
        monkeypatch.setenv("NYLA_RESYNC_INTERVAL", bad)
        with pytest.raises(ScheduleConfigError, match="NYLA_RESYNC_INTERVAL"):
            resync_interval()


def test_a_callers_limits_only_narrow_the_stored_ones():
    stored = {**FILES_LIMITS_DEFAULT, "max_items": 30}
    assert narrowed(stored, {"max_items": 50})["max_items"] == 30  # a first slice of 50
    assert narrowed(stored, {"max_items": 10})["max_items"] == 10
    assert narrowed(stored, None) == stored
    assert narrowed(stored, {"max_tasks": 3})["max_tasks"] == 3  # another kind's, as given


def test_the_estimate_is_sized_by_what_the_source_holds_when_its_last_sync_read_it_all():
    source = {"settings": {}}
    held = Held(items=3, bytes=1434, tokens=300, complete=True)
    est = estimate_cost(
        source, "files", source_id="d", price_chf_per_mtok=0.13, price_model="x:large", held=held
    )
    assert est.estimated_tokens == 300
    assert est.estimated_chf == pytest.approx(300 * 0.13 / 1e6)
    assert est.basis.assumptions["sizedBy"] == "indexed"
    assert est.basis.assumptions["sourceBytes"] == 1434
    assert any("3 item(s), 1.4 KB" in note for note in est.basis.notes), est.basis.notes
    assert any("x:large (0.13 CHF" in note for note in est.basis.notes)


def test_the_limits_cap_what_is_known_and_bound_what_is_not():
    capped = estimate_cost(
        {"settings": {"ragLimits": {"maxBytes": 1000}}},
        "files",
        source_id="d",
        held=Held(items=9, bytes=5000, tokens=1200, complete=True),
    )
    assert capped.basis.assumptions["sourceBytes"] == 1000
    assert capped.estimated_tokens == 100  # 1000 bytes x 0.4 / 4, not the 1200 counted
    assert any("capped by its limits" in note for note in capped.basis.notes)
    partial = estimate_cost(
        {"settings": {}},
        "files",
        source_id="d",
        held=Held(items=50, bytes=5000, tokens=1200, complete=False),
    )
    assert partial.basis.assumptions["sizedBy"] == "limits"
    assert partial.basis.assumptions["sourceBytes"] == 500 * MB
    assert any("stopped at a limit after 50" in note for note in partial.basis.notes)
    unread = estimate_cost({"settings": {}}, "files", source_id="d")
    assert any("has not been read yet" in note for note in unread.basis.notes)
    assert any("no embedding model can be chosen" in note for note in unread.basis.notes)


def test_a_free_model_costs_nothing_and_says_so():
    free = estimate_cost(
        {"settings": {}},
        "files",
        source_id="d",
        price_chf_per_mtok=0.0,
        price_model="local:hash-384",
        held=Held(items=2, bytes=800, tokens=0, complete=True),
    )
    assert free.estimated_chf == 0.0
    assert free.estimated_tokens == 80  # no tokens counted: from the bytes
    assert free.basis.assumptions["model"] == "local:hash-384"
    assert any("local:hash-384 is free" in note for note in free.basis.notes)


def test_a_listing_sizes_a_source_no_sync_has_read_and_a_cut_one_only_bounds_it():
    listed = estimate_cost(
        {"settings": {}},
        "files",
        source_id="d",
        held=Held(items=0, bytes=0, tokens=0, complete=False),
        listed=Held(items=3, bytes=1434, tokens=0, complete=True),
    )
    assert listed.basis.assumptions["sizedBy"] == "listed"
    assert listed.basis.assumptions["sourceItems"] == 3
    assert listed.estimated_tokens == int(1434 * 0.4 / 4)
    assert any("a listing of the source now: 3 item(s), 1.4 KB" in n for n in listed.basis.notes)
    cut = estimate_cost(
        {"settings": {}},
        "files",
        source_id="d",
        listed=Held(items=700, bytes=9000, tokens=0, complete=False),
    )
    assert cut.basis.assumptions["sizedBy"] == "limits"
    assert any("cut short after 700 item(s)" in n for n in cut.basis.notes), cut.basis.notes


async def test_closing_the_kernel_stops_a_started_resync_schedule(make_kernel, scripted, db):
    # a host that never ran its shutdown must not leave the schedule ticking in the loop
    kernel = make_kernel(scripted(["done"]), db=db, settings={"resync_interval": 3600})
    scheduler = kernel.sync.scheduler
    scheduler.start()
    task = scheduler._task
    assert task is not None and not task.done()
    await kernel.aclose()
    assert task.done() and scheduler._task is None
