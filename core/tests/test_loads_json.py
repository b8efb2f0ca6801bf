"""``nyla.text.loads_json`` is ``json.loads`` (same values, same errors), only cheaper."""

from __future__ import annotations

import json

import pytest

from nyla.text import loads_json

SAMPLES = [
    '{"round": 12}',
    '{"a": [1, 2, {"b": null}], "c": "x\\u00e9"}',
    "[1, 2, 3]",
    ' {"a": 1} ',
    '{"a": 1}\n',
    '{"a": 1} {"b": 2}',
    '{"a": 1}]',
    '{"a": 1',
    "{}",
    "[]",
    "{]",
    '"text"',
    "12",
    "NaN",
    "[NaN, Infinity]",
    "",
    "   ",
    "\ufeff{}",
    '{"a": 1,}',
    "{'a': 1}",
    '{"a": "\x00"}',
    "[" * 5 + "]" * 5,
]


def outcome(parse, raw):
    try:
        return "ok", parse(raw)
    except Exception as exc:  # compare the kind and the words of the error
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("raw", SAMPLES)
def test_loads_json_answers_what_json_loads_answers(raw: str) -> None:
    ours, theirs = outcome(loads_json, raw), outcome(json.loads, raw)
    if ours[0] == "ok" and theirs[0] == "ok":
        assert json.dumps(ours[1]) == json.dumps(theirs[1])
    else:
        assert ours == theirs


def test_deep_nesting_fails_as_json_loads_fails() -> None:
    raw = "[" * 100_000 + "]" * 100_000
    with pytest.raises(RecursionError):
        json.loads(raw)
    with pytest.raises(RecursionError):
        loads_json(raw)
