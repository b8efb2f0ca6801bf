"""The round buffer's records (made without the named tuple's Python ``__new__``) are
RoundRecords like a constructed one, and a round held past the hold time writes what is held."""

from __future__ import annotations

from nyla.knowledge.remembering import RoundBuffer, RoundRecord
from nyla.models.agent import RoundToolResult, RunContext


class Written:
    def __init__(self) -> None:
        self.batches: list[list[RoundRecord]] = []

    async def record_rounds(self, rounds: list[RoundRecord]) -> None:
        self.batches.append(list(rounds))


async def test_a_held_record_is_the_constructed_one() -> None:
    written = Written()
    buffer = RoundBuffer(written, hold_s=1e9)  # type: ignore[arg-type]
    context = RunContext(user_id="u")
    results = (RoundToolResult("read", True, "ok"),)
    await buffer(run_id="r", round=2, context=context, tool_results=results, file_refs=("a",))
    (held,) = buffer.rounds
    assert type(held) is RoundRecord
    assert held == RoundRecord("r", 2, context, ["a"], list(results), [])
    assert (held.run_id, held.round, held.context, held.decisions) == ("r", 2, context, [])
    assert type(held.file_refs) is list and type(held.tool_results) is list
    assert written.batches == []


async def test_a_round_past_the_hold_time_writes_the_held_ones_with_it() -> None:
    written = Written()
    buffer = RoundBuffer(written, hold_s=0.0)  # type: ignore[arg-type]
    context = RunContext(user_id="u")
    await buffer(run_id="r", round=1, context=context)
    await buffer(run_id="r", round=2, context=context)
    assert [[r.round for r in batch] for batch in written.batches] == [[1], [2]]
    assert buffer.rounds == []
