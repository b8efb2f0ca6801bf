"""Trace persistence: a run's row and its tool calls written in one transaction, replaced
whole when the same run is written again, read back as they were."""

from __future__ import annotations

from datetime import UTC, datetime

from nyla.agent.trace import list_traces, load_trace, save_trace
from nyla.models.agent import AgentStatus, AgentTrace, RunContext, ToolCallLog


def _trace(calls: int, status: AgentStatus = AgentStatus.COMPLETED) -> AgentTrace:
    return AgentTrace(
        run_id="run-1",
        prompt="p\x00rompt",
        status=status,
        started_at=datetime(2026, 12, 2, tzinfo=UTC),
        finished_at=datetime(2026, 12, 2, 0, 1, tzinfo=UTC),
        context=RunContext(user_id="ada", mandate_id="m1"),
        rounds=calls,
        tool_calls=[
            ToolCallLog(
                round=i + 1,
                call_id=f"c{i}" + "x" * 200,
                tool_name="read",
                arguments=f'{{"i": {i}}}',
                success=i % 2 == 0,
                error=None if i % 2 == 0 else "failed",
                duration_ms=1.5,
            )
            for i in range(calls)
        ],
    )


async def test_a_trace_is_read_back_as_written_and_replaced_whole(db) -> None:
    await save_trace(db, _trace(3))
    saved = await load_trace(db, "run-1")
    assert saved is not None
    assert saved.prompt == "p\ufffdrompt"  # NUL made storable
    assert saved.context.user_id == "ada" and saved.context.mandate_id == "m1"
    assert [(c.round, c.success, c.error) for c in saved.tool_calls] == [
        (1, True, None),
        (2, False, "failed"),
        (3, True, None),
    ]
    assert len(saved.tool_calls[0].call_id) == 128  # cut to its column

    await save_trace(db, _trace(1, AgentStatus.CANCELLED))
    again = await load_trace(db, "run-1")
    assert again is not None and again.status is AgentStatus.CANCELLED
    assert [c.call_id[:2] for c in again.tool_calls] == ["c0"]
    assert [t.run_id for t in await list_traces(db, user_id="ada")] == ["run-1"]


async def test_a_trace_without_tool_calls_is_saved(db) -> None:
    await save_trace(db, _trace(0))
    saved = await load_trace(db, "run-1")
    assert saved is not None and saved.tool_calls == []


async def test_any_text_a_model_sends_is_stored_in_a_new_runs_calls(db) -> None:
    trace = _trace(3)
    odd = [
        ("a\x00b", "a\ufffdb"),
        ('\ud800 "quoted" é \\ \n', '\ufffd "quoted" é \\ \n'),
        ('{"x": [1, 2]}', '{"x": [1, 2]}'),
    ]
    for call, (sent, _stored) in zip(trace.tool_calls, odd, strict=True):
        call.arguments = sent
        call.error = sent
    trace.tool_calls[1].duration_ms = float("nan")  # not JSON: written the other way
    await save_trace(db, trace.model_copy(update={"run_id": "run-nan"}))
    trace.tool_calls[1].duration_ms = 2.5
    await save_trace(db, trace)
    for run_id in ("run-1", "run-nan"):
        saved = await load_trace(db, run_id)
        assert saved is not None
        assert [(c.arguments, c.error) for c in saved.tool_calls] == [(s, s) for _, s in odd]
        assert [c.round for c in saved.tool_calls] == [1, 2, 3]
    saved = await load_trace(db, "run-1")
    assert saved is not None and [c.duration_ms for c in saved.tool_calls] == [1.5, 2.5, 1.5]


async def test_a_runs_records_are_stored_as_cleaned_whichever_way_they_are_written(db) -> None:
    """Calls that need no cleaning go as they are (checked column by column); any call that
    does sends the whole batch through the cleaning of each value. Both store the same."""
    from nyla.agent.trace import _CALL_VALUES, _cleaned, _storable
    from nyla.models.agent import CallRecord

    def record(**change: object) -> CallRecord:
        values = {
            "round": 1,
            "call_id": "c1",
            "tool_name": "read",
            "arguments": '{"é": 1}',
            "success": True,
            "error": None,
            "validation_failure_code": None,
            "duration_ms": 1.5,
        }
        values.update(change)
        return CallRecord.of(*values.values())

    plain = [record(), record(round=2, success=False, error="no", validation_failure_code="X")]
    odd = [
        {"round": True},  # a bool is not an int here: int(True)
        {"success": 1},
        {"duration_ms": True},
        {"duration_ms": 3},  # an int is stored as its float either way
        {"call_id": "c" * 200},
        {"tool_name": "t" * 300},
        {"validation_failure_code": "V" * 80},
        {"arguments": "a\x00b"},
        {"error": "\ud800"},
        {"error": 7},
    ]
    assert _storable([_cleaned(c) for c in plain])
    for i, change in enumerate(odd):
        calls = [*plain, record(**change)]
        assert _storable(list(map(_CALL_VALUES, calls))) == (change == {"duration_ms": 3})
        trace = _trace(0).model_copy(update={"run_id": f"run-odd-{i}"})
        await save_trace(db, trace, calls)
        saved = await load_trace(db, trace.run_id)
        assert saved is not None
        assert list(map(_CALL_VALUES, saved.tool_calls)) == [_cleaned(c) for c in calls], change
