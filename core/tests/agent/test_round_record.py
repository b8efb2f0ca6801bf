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
from nyla.agent.run import AgentRun
from nyla.models.agent import RoundToolResult, RunContext
from nyla.models.ai import AiCallResponse, ToolCall
from nyla.models.tools import ToolResult


def file_refs(results: list[Dispatched]) -> list[str]:
    """The references as record read them before (its own pass, then AgentRun.file_refs)."""
    refs: list[str] = []
    for d in results:
        data = d.result.data
        if isinstance(data, dict):
            for key in ("fileId", "docItem"):
                if isinstance(data.get(key), str):
                    refs.append(data[key])
    return refs


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


def test_the_calls_are_logged_with_their_validation_failure_codes() -> None:
    from nyla.agent.repair import validation_failure_code
    from nyla.models.agent import CallRecord
    from nyla.models.tools import ToolErrorDetails

    invalid = ToolResult(
        success=False,
        error="arguments invalid",
        error_details=ToolErrorDetails(code="INVALID_TYPE"),
    )
    flagged = ToolResult(
        success=False,
        error="refused",
        data={"validationFailure": True},
        error_details=ToolErrorDetails(code="X"),
    )
    results = [*_results(), Dispatched(ToolCall(id="v", name="v"), invalid, 2.0, False)]
    results.append(Dispatched(ToolCall(id="w", name="w"), flagged, 3.0, False))
    run = object.__new__(AgentRun)
    run.calls, run._unlogged = [], [(2, d) for d in results]
    run.log_calls()
    expected = [
        CallRecord.of(
            2,
            d.call.id,
            d.call.name,
            d.call.arguments,
            d.result.success,
            d.result.error,
            validation_failure_code(d.result),
            d.duration_ms,
        )
        for d in results
    ]
    assert run.calls == expected and run._unlogged == []
    assert [c.validation_failure_code for c in run.calls][-2:] == ["INVALID_TYPE", "X"]


def test_the_models_answer_is_kept_as_the_message_it_constructs() -> None:
    from nyla.agent.conversation import said
    from nyla.models.ai import Message, Role

    calls = [ToolCall(id="a", name="read", arguments='{"round": 1}')]
    for response in (
        AiCallResponse(content="", tool_calls=calls, model="m"),
        AiCallResponse(content="done", model="m"),
    ):
        made = said(response)
        direct = Message(
            role=Role.ASSISTANT, content=response.content, tool_calls=response.tool_calls
        )
        assert made == direct and made.model_fields_set == direct.model_fields_set
        assert made.model_dump() == direct.model_dump() and type(made) is Message


def test_a_runs_request_is_the_trusted_request_of_its_values() -> None:
    from nyla.models.agent import AgentConfig
    from nyla.models.ai import AiCallRequest, Message, OperationType, Role, ToolDefinition

    run = object.__new__(AgentRun)
    run.config = AgentConfig(max_cost_chf=2.0, temperature=0.3)
    run.context, run.session, run.spent = RunContext(user_id="u"), object(), 0.5
    messages = [Message(role=Role.USER, content="hi")]
    tools = [ToolDefinition(name="t", description="d", parameters={"type": "object"})]
    for kwargs in (
        {"tools": tools, "model": "m"},
        {"max_output_tokens": 400},
        {},
    ):
        made = run.request(OperationType.AGENT, messages, **kwargs)  # type: ignore[arg-type]
        trusted = AiCallRequest.trusted(
            operation=OperationType.AGENT,
            messages=messages,
            tools=kwargs.get("tools", []),
            temperature=0.3,
            context=run.context,
            max_cost_chf=1.5,
            neutralization=run.session,
            model=kwargs.get("model"),
            max_output_tokens=kwargs.get("max_output_tokens"),
        )
        assert made == trusted and made.model_fields_set == trusted.model_fields_set
        assert made.__dict__ == trusted.__dict__ and type(made) is AiCallRequest
        assert made.messages is messages and made.neutralization is run.session
    first, second = (
        run.request(OperationType.AGENT, messages),
        run.request(OperationType.DATA_ANALYSE, messages),
    )
    assert first.stop == second.stop == [] and first.stop is not second.stop
    assert first.tools is not second.tools and second.operation is OperationType.DATA_ANALYSE
