"""The settings fingerprint compares the environment only after a write to it (the watched
mapping behind ``os.environ``), and still sees every change the full compare saw."""

from __future__ import annotations

import os

import pytest

from nyla import config
from nyla.config import reload, settings_fingerprint


def test_os_environ_is_watched_and_environb_shares_the_mapping() -> None:
    data = os.environ._data  # type: ignore[attr-defined]
    assert type(data) is config._WatchedEnviron
    environb = getattr(os, "environb", None)
    if environb is not None:
        assert environb._data is data


def test_no_write_no_compare_and_a_write_is_seen(monkeypatch) -> None:
    before = settings_fingerprint()
    seen = config._writes_seen
    assert settings_fingerprint() == before and config._writes_seen == seen
    monkeypatch.setenv("NYLA_FINGERPRINT_WATCHED", "1")
    assert config._writes_seen == seen  # counted, not yet compared
    added = settings_fingerprint()
    assert added != before and config._writes_seen != seen


def test_the_same_value_written_again_keeps_the_fingerprint(monkeypatch) -> None:
    monkeypatch.setenv("NYLA_FINGERPRINT_WATCHED", "same")
    first = settings_fingerprint()
    os.environ["NYLA_FINGERPRINT_WATCHED"] = "same"  # a write, but nothing changed
    assert settings_fingerprint() == first


def test_a_change_undone_before_the_next_look_keeps_the_fingerprint(monkeypatch) -> None:
    monkeypatch.setenv("NYLA_FINGERPRINT_WATCHED", "a")
    first = settings_fingerprint()
    os.environ["NYLA_FINGERPRINT_WATCHED"] = "b"
    os.environ["NYLA_FINGERPRINT_WATCHED"] = "a"
    assert settings_fingerprint() == first  # as the full compare saw it


def _raw() -> dict:
    return os.environ._data  # type: ignore[attr-defined,no-any-return]


def _raw_key(text: str) -> object:
    return text if os.name == "nt" else text.encode()


@pytest.mark.parametrize(
    "change",
    [
        lambda: os.environ.update(NYLA_FINGERPRINT_WATCHED="u"),
        lambda: os.environ.setdefault("NYLA_FINGERPRINT_WATCHED_NEW", "s"),
        lambda: os.environ.pop("NYLA_FINGERPRINT_WATCHED"),
        lambda: _raw().pop(_raw_key("NYLA_FINGERPRINT_WATCHED"), None),
        lambda: _raw().update({_raw_key("NYLA_FINGERPRINT_RAW"): _raw_key("r")}),
    ],
    ids=["update", "setdefault", "pop", "raw-pop", "raw-update"],
)
def test_every_mutator_is_seen(monkeypatch, change) -> None:
    monkeypatch.setenv("NYLA_FINGERPRINT_WATCHED", "1")
    monkeypatch.delenv("NYLA_FINGERPRINT_WATCHED_NEW", raising=False)
    monkeypatch.delenv("NYLA_FINGERPRINT_RAW", raising=False)
    before = settings_fingerprint()
    change()
    try:
        assert settings_fingerprint() != before
    finally:
        os.environ.pop("NYLA_FINGERPRINT_WATCHED_NEW", None)
        os.environ.pop("NYLA_FINGERPRINT_RAW", None)


def test_environb_writes_are_seen(monkeypatch) -> None:
    environb = getattr(os, "environb", None)
    if environb is None:
        pytest.skip("no os.environb on this platform")
    before = settings_fingerprint()
    monkeypatch.setitem(environb, b"NYLA_FINGERPRINT_BYTES", b"1")
    assert settings_fingerprint() != before


def test_a_replaced_environment_is_compared_every_time(monkeypatch) -> None:
    plain = dict(os.environ)
    monkeypatch.setattr(os, "environ", plain)
    before = settings_fingerprint()
    assert settings_fingerprint() == before
    plain["NYLA_FINGERPRINT_PLAIN"] = "1"  # no counter on a plain dict: the compare sees it
    assert settings_fingerprint() != before


def test_reload_changes_the_fingerprint_without_an_environment_write() -> None:
    before = settings_fingerprint()
    reload()
    after = settings_fingerprint()
    assert after != before and settings_fingerprint() == after


def test_a_pinned_fingerprint_holds_until_unpinned(monkeypatch) -> None:
    token = config.pin_settings()
    try:
        pinned = settings_fingerprint()
        monkeypatch.setenv("NYLA_FINGERPRINT_WATCHED", "pinned")
        assert settings_fingerprint() == pinned
    finally:
        config.unpin_settings(token)
    assert settings_fingerprint() != pinned
