"""What a round hands its round recorder (AgentRun.record): the results' file references and
each result as round memory keeps it, made in one pass, under the run's cancel scope."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from nyla.agent.batches import Dispatched
from nyla.agent.cancel import CancelScope, RunCancelled
from nyla.agent.registry import result_text
from nyla.agent.run import AgentRun, file_refs
from nyla.models.agent import RoundToolResult, RunContext
from nyla.models.ai import AiCallResponse, ToolCall
from nyla.models.tools import ToolResult


class _Trace:
    run_id = "run-1"


def _run(recorder: Any, cancel: CancelScope | None = None) -> AgentRun:
    run = object.__new__(AgentRun)
    run.trace, run.context, run.round = _Trace(), RunContext(), 3  # type: ignore[assignment]
    run.round_recorder, run.cancel = recorder, cancel
    return run


def _results() -> list[Dispatched]:
    long = "x" * 2500
    made = [
        (ToolResult.ok("read 1 ok"), "read 1 ok"),
        (ToolResult.ok(data={"fileId": "f-1", "docItem": "docItem:a", "n": 1}), None),
        (ToolResult.ok(data={"fileId": 7, "docItem": "docItem:b"}), "given text"),
        (ToolResult.fail("NOT_FOUND", "no such file"), None),
        (ToolResult.ok(long), long),
        (ToolResult.ok(data=["fileId", "docItem"]), None),
    ]
    return [
        Dispatched(ToolCall(id=f"c{i}", name=f"tool_{i}"), result, 1.0, True, text)
        for i, (result, text) in enumerate(made)
    ]


async def test_the_recorder_gets_the_rounds_refs_and_results_as_made_one_by_one() -> None:
    handed: list[dict[str, Any]] = []

    async def recorder(**kw: Any) -> None:
        handed.append(kw)

    results = _results()
    response = AiCallResponse(content="I will read.", model="m")
    await _run(recorder).record(response, results)
    [kw] = handed
    assert kw["run_id"] == "run-1" and kw["round"] == 3 and kw["context"] == RunContext()
    assert kw["file_refs"] == file_refs(results) == ["f-1", "docItem:a", "docItem:b"]
    expected = [
        RoundToolResult(
            d.call.name,
            d.result.success,
            (d.text if d.text is not None else result_text(d.result))[:2000],
        )
        for d in results
    ]
    kept = kw["tool_results"]
    assert kept == expected and [type(r) for r in kept] == [RoundToolResult] * len(expected)
    assert len(kept[4].content) == 2000 and kept[2].content == "given text"
    assert hash(kept[0]) == hash(expected[0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        kept[0].content = "changed"  # type: ignore[misc]
    assert kw["decisions"] == ["I will read."]


async def test_a_cancel_during_the_recorders_wait_ends_the_round() -> None:
    event = asyncio.Event()
    started = asyncio.Event()

    async def recorder(**kw: Any) -> None:
        started.set()
        await asyncio.sleep(30)

    scope = CancelScope(event)
    run = _run(recorder, scope)
    task = asyncio.ensure_future(run.record(AiCallResponse(content="", model="m"), _results()))
    await started.wait()
    event.set()
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(task, 5)
    scope.close()


async def test_a_failing_recorder_is_logged_and_the_run_goes_on(caplog) -> None:
    async def recorder(**kw: Any) -> None:
        raise RuntimeError("round memory down")

    scope = CancelScope(asyncio.Event())
    await _run(recorder, scope).record(AiCallResponse(content="", model="m"), _results())
    await _run(None).record(AiCallResponse(content="", model="m"), _results())
    scope.close()
    assert "round memory down" in caplog.text
