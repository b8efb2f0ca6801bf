"""Regression tests from the held-out fault campaign (issue 12): nothing a tool or a model
sends ends a run, hangs it, or loses its trace."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import pytest
from pydantic import BaseModel

from nyla.agent.spec import RunSpec
from nyla.agent.trace import load_trace
from nyla.ai.service import AiService, invalid_tool_arguments
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import ChatRequest, StreamDelta, ToolCall
from nyla.models.tools import Tool, ToolContext, ToolResult
from nyla.testing.scripted import ScriptedProvider


class NoArgs(BaseModel):
    pass


def tool(name: str, handler: Any, timeout_s: float | None = None) -> Tool:
    return Tool.from_model(name, f"{name}.", NoArgs, handler, read_only=True, timeout_s=timeout_s)


def calls_then_answer(*calls: ToolCall):
    def script(request: ChatRequest, i: int) -> Any:
        return list(calls) if i == 0 else "done"

    return script


async def run(kernel, tools, config=None) -> tuple[list, Any]:
    events = [
        e
        async for e in kernel.agent.loop(
            RunSpec(
                "go", config=config or AgentConfig(stream=False), context=RunContext(), tools=tools
            ),
        )
    ]
    return events, events[-1].data


def results(events) -> list[dict]:
    return [e.data for e in events if e.type.value == "TOOL_RESULT"]


async def test_arguments_nested_a_thousand_levels_deep_are_a_structured_error(
    scripted, make_kernel, db
):
    deep = "[" * 1000 + "]" * 1000
    call = ToolCall(id="c1", name="ping", arguments='{"a": ' + deep + "}")
    assert invalid_tool_arguments([ToolCall(id="x", name="ping", arguments="[" * 100_000)])

    async def ping(args, ctx):
        return "pong"

    kernel = make_kernel(scripted(calls_then_answer(call)), db=db, builtins=False)
    events, summary = await run(kernel, [tool("ping", ping)])
    assert summary["status"] == "completed"
    assert results(events)[0]["success"] is False


class Boom:
    def __str__(self) -> str:
        raise RuntimeError("no text for you")

    __repr__ = __str__


@pytest.mark.parametrize("kind", ["circular", "huge_int", "bad_str"])
async def test_unserialisable_results_do_not_end_the_run(kind, scripted, make_kernel, db):
    async def weird(args, ctx):
        if kind == "circular":
            data: Any = {}
            data["self"] = data
        elif kind == "huge_int":
            data = {"n": 10**5000}
        else:
            data = {"obj": Boom()}
        return ToolResult(success=True, data=data)

    kernel = make_kernel(
        scripted(calls_then_answer(ToolCall(id="c1", name="weird"))), db=db, builtins=False
    )
    events, summary = await run(kernel, [tool("weird", weird)])
    assert summary["status"] == "completed"
    assert events[-2].type.value == "FINAL"
    trace = await load_trace(db, summary["runId"])
    assert [c.tool_name for c in trace.tool_calls] == ["weird"]


@pytest.mark.parametrize(
    "exc", [asyncio.CancelledError, GeneratorExit, KeyboardInterrupt, SystemExit]
)
async def test_stop_exceptions_raised_inside_a_tool_are_the_tool_s_failure(
    exc, scripted, make_kernel, db
):
    async def stop(args, ctx):
        raise exc()

    kernel = make_kernel(
        scripted(calls_then_answer(ToolCall(id="c1", name="stop"))), db=db, builtins=False
    )
    events, summary = await run(kernel, [tool("stop", stop)])
    assert summary["status"] == "completed"
    [result] = results(events)
    assert result["success"] is False and result["errorDetails"]["code"] == "TOOL_ERROR"


async def test_timeouts_are_a_bound_and_never_a_success(scripted, make_kernel, db):
    async def blocks_the_loop(args, ctx):
        time.sleep(0.3)
        return "finished late"

    async def swallows_cancel(args, ctx):
        for _ in range(3):
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.2)
        return "finished anyway"

    async def raises_timeout(args, ctx):
        raise TimeoutError("the tool's own upstream timed out")

    def sync_tool(args, ctx):
        time.sleep(0.3)
        return "sync late"

    tools = [
        tool("block", blocks_the_loop, 0.05),
        tool("swallow", swallows_cancel, 0.05),
        tool("own", raises_timeout, 5),
        tool("sync", sync_tool, 0.05),
    ]
    script = calls_then_answer(*(ToolCall(id=f"c{i}", name=t.name) for i, t in enumerate(tools)))
    kernel = make_kernel(scripted(script), db=db, builtins=False)
    events, summary = await run(kernel, tools)
    outcome = [(r["success"], r["errorDetails"]["code"]) for r in results(events)]
    assert outcome == [
        (False, "TIMEOUT"),
        (False, "TIMEOUT"),
        (False, "TOOL_ERROR"),
        (False, "TIMEOUT"),
    ], outcome
    assert summary["status"] == "completed"


class HangingStream(ScriptedProvider):
    """A provider whose stream sends one chunk and then nothing, ever."""

    async def chat(self, request):
        await asyncio.Event().wait()

    async def stream(self, request):
        yield StreamDelta(kind="text", text="Thinking")
        await asyncio.Event().wait()


async def test_a_hanging_provider_does_not_hang_a_streamed_run(scripted, make_kernel, db):
    from nyla.testing.scripted import ScriptedPlugin

    provider = HangingStream(lambda r, i: "never")
    kernel = make_kernel(
        ScriptedPlugin(provider),
        db=db,
        builtins=False,
        settings={"ai": {"stream_idle_timeout_s": 0.05, "max_attempts": 1, "max_fallbacks": 0}},
    )
    _events, summary = await asyncio.wait_for(run(kernel, [], AgentConfig(stream=True)), timeout=30)
    assert summary["status"] == "error"
    assert "stalled" in (await load_trace(db, summary["runId"])).error


def test_ai_timeout_comes_from_the_environment(monkeypatch, make_kernel):
    monkeypatch.setenv("NYLA_AI_TIMEOUT_S", "7.5")
    service = AiService(make_kernel(builtins=False).plugins)
    assert service.timeout_s == 7.5 and service.stream_idle_timeout_s == 7.5
    assert service.retry_budget_s > 7.5
    monkeypatch.setenv("NYLA_AI_TIMEOUT_S", "not a number")
    assert AiService(make_kernel(builtins=False).plugins).timeout_s == 600.0


async def test_traces_with_hostile_strings_are_kept_whole(scripted, make_kernel, db):
    calls = [
        ToolCall(id="c1", name="ping\x00", arguments='{"a": "\x00"}'),
        ToolCall(id="c2", name="p\ud800ng", arguments='{"a": "\ud800"}'),
        ToolCall(id="c3", name="x" * 400, arguments="{}"),
        ToolCall(id="c" * 300, name="ping", arguments="{}"),
    ]

    def script(request, i):
        return calls if i == 0 else "the end \ud800 of it"

    async def ping(args, ctx):
        return "pong"

    kernel = make_kernel(scripted(script), db=db, builtins=False)
    events, summary = await run(kernel, [tool("ping", ping)])
    final = events[-2]
    final.text.encode("utf-8")  # a lone surrogate would make the CLI fail here
    json.dumps(final.to_wire()).encode("utf-8")
    trace = await load_trace(db, summary["runId"])
    assert trace is not None, "the trace was lost"
    assert len(trace.tool_calls) == 4 and trace.final_text.startswith("the end")
    for call in trace.tool_calls:
        call.tool_name.encode("utf-8")
        assert len(call.tool_name) <= 255 and len(call.call_id) <= 128


async def test_dispatch_keeps_the_run_s_own_cancel(scripted, make_kernel, db):
    started = asyncio.Event()

    async def slow(args, ctx):
        started.set()
        await asyncio.sleep(30)

    from nyla.agent.registry import ToolRegistry

    registry = ToolRegistry([tool("slow", slow, 60)])
    task = asyncio.create_task(registry.dispatch(ToolCall(id="c", name="slow"), ToolContext()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
