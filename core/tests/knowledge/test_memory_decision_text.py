"""A round's decisions that are plain text are cleaned directly: the same strings as the JSON
round trip every other value takes (NUL and lone surrogates made storable)."""

from __future__ import annotations

import json

import pytest

from nyla.knowledge.memory import _clean, _jsonable


@pytest.mark.parametrize("text", ["go on", "Zürich\x00", "half \ud800 pair", "", "\x00"])
def test_a_text_decision_is_what_the_round_trip_gives(text: str) -> None:
    assert _jsonable([text]) == [_clean(json.loads(json.dumps(text)))]
    assert "\x00" not in _jsonable([text])[0]
