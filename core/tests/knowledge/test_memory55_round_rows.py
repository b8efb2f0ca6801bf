"""Round memory rows whose tool results go to the database as ``(name, success, content)``
triples (made the objects by the insert) are stored as the objects the general path makes:
a uniform list of RoundToolResults, one with strings to clean, and mixed lists."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from nyla.knowledge import memory
from nyla.models.agent import RoundToolResult, RunContext
from nyla.tables.knowledge import RoundMemory

pytestmark = pytest.mark.db


class _Name(str):
    """A str subclass: not JSON's own type, so the general path writes it."""


def _general(values: list[object]) -> list[object]:
    """What round memory stored for ``values`` before the triples: each result's wire form
    through a JSON round trip, every string cleaned."""
    out = []
    for v in values:
        wire = v.to_wire() if isinstance(v, RoundToolResult) else v
        out.append(memory._clean(json.loads(json.dumps(wire, default=str))))
    return out


CASES: list[tuple[list[object], bool]] = [
    # (tool results, sent as triples)
    (
        [
            RoundToolResult("read_a", True, "read 1 ok"),
            RoundToolResult("write_b", False, 'no "quote" \\ here'),
        ],
        True,
    ),
    (
        [
            RoundToolResult("réad\x00", False, "\ud800 ok é"),
            RoundToolResult("write", True, "x\x00y"),
            RoundToolResult("emoji", True, '😀 {"a": [1]}'),
        ],
        True,
    ),
    ([RoundToolResult("read", True, "ok"), "done", {"k": "v\x00"}], False),
    ([RoundToolResult("read", True, {"rows": [1, 2]}), RoundToolResult("x", 1, "y")], False),  # type: ignore[arg-type]
    ([RoundToolResult(_Name("read"), True, "ok")], False),
    ([], False),
]


@pytest.mark.parametrize(("results", "triples"), CASES)
def test_rows_send_triples_only_for_clean_uniform_results(
    results: list[object], triples: bool
) -> None:
    row = _row(1, results)
    assert row["tool_triples"] is triples
    if not triples:
        assert row["tool_results"] == _general(results)
    else:
        assert [
            dict(zip(("toolName", "success", "content"), t, strict=True))
            for t in row["tool_results"]
        ] == _general(results)


async def test_stored_tool_results_are_the_general_paths_objects(db) -> None:
    rows = [_row(n, results) for n, (results, _triples) in enumerate(CASES)]
    await memory.insert_rounds(db, rows)
    async with db.session() as s:
        stored = list((await s.execute(select(RoundMemory).order_by(RoundMemory.round))).scalars())
    assert [r.tool_results for r in stored] == [_general(results) for results, _t in CASES]
    # the objects keep their order and the other columns are where they were
    assert [r.round for r in stored] == list(range(len(CASES)))
    assert [r.decisions for r in stored] == [["go\ufffd on", "\ufffd"]] * len(CASES)
    assert all(r.summary == "s" and r.file_refs == ["file:a"] for r in stored)


def test_a_decisions_text_is_what_the_json_round_trip_gave() -> None:
    texts = ["go on", "go\x00 on", "\udc80 é", ""]
    assert memory._jsonable(texts) == _general(texts)


def _row(n: int, results: list[object]) -> dict[str, object]:
    return memory.round_row(
        run_id="run-55",
        round=n,
        context=RunContext(user_id="ada"),
        file_refs=["file:a"],
        tool_results=results,
        decisions=["go\x00 on", "\udfff"],
        summary="s",
        model="local:hash-2",
        vector=[1.0, float(n)],
    )
