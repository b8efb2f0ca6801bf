"""The round recorder's record of a round (a named tuple made every round): the round's
arguments as it was called, copied, and not to be changed afterwards."""

from __future__ import annotations

import pytest

from nyla.knowledge.remembering import RoundBuffer, RoundRecord
from nyla.models.agent import RoundToolResult, RunContext


class Written:
    def __init__(self) -> None:
        self.batches: list[list[RoundRecord]] = []

    async def record_rounds(self, rounds: list[RoundRecord]) -> None:
        self.batches.append(list(rounds))


async def test_a_held_round_is_its_arguments_copied_and_fixed() -> None:
    written = Written()
    buffer = RoundBuffer(written, hold_s=1e9)  # type: ignore[arg-type]
    context = RunContext(user_id="u", run_id="r")
    results = [RoundToolResult(tool_name="read", success=True, content="ok")]
    refs, decisions = ["a.md"], [{"pick": 1}]
    await buffer(
        run_id="r",
        round=3,
        context=context,
        file_refs=refs,
        tool_results=results,
        decisions=decisions,
    )
    await buffer(run_id="r", round=4, context=context)
    results.append(RoundToolResult(tool_name="late", success=False, content="no"))
    refs.clear()
    decisions.clear()
    await buffer.flush()
    ((first, second),) = written.batches
    assert (first.run_id, first.round, first.context) == ("r", 3, context)
    assert first.file_refs == ["a.md"] and first.decisions == [{"pick": 1}]
    assert first.tool_results == [RoundToolResult(tool_name="read", success=True, content="ok")]
    assert (second.round, second.file_refs, second.tool_results, second.decisions) == (
        4,
        [],
        [],
        [],
    )
    with pytest.raises(AttributeError):
        first.round = 5  # type: ignore[misc]
    assert RoundRecord("r", 1, context) == RoundRecord(
        run_id="r", round=1, context=context, file_refs=(), tool_results=(), decisions=()
    )
    assert buffer.rounds == []
