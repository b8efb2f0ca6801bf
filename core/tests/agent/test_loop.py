"""The agent loop end to end over the scripted model, the real AI service and PostgreSQL:
every end state, repair telemetry, requestToolbox, summarization, neutralization,
cancellation and the persisted trace."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from pydantic import BaseModel

from nyla.agent.spec import RunSpec
from nyla.agent.trace import list_traces, load_trace
from nyla.errors import ProviderBadRequestError
from nyla.hookspecs import hookimpl
from nyla.models.agent import AgentConfig, AgentStatus, EventType, RoundToolResult, RunContext
from nyla.models.ai import ChatRequest, ChatResponse, OperationType, Role, ToolCall, Usage
from nyla.models.neutralize import Finding
from nyla.models.tools import Tool, Toolbox, ToolContext, ToolResult
from nyla.testing.helpers import ToolboxPlugin


class NoArgs(BaseModel):
    pass


class PartArgs(BaseModel):
    part: int


class NoteArgs(BaseModel):
    text: str
    count: int


def tool(name: str, handler: Any, *, args: type[BaseModel] = NoArgs, read_only: bool = True):
    return Tool.from_model(name, f"The {name} tool.", args, handler, read_only=read_only)


async def lookup(args: BaseModel, ctx: ToolContext) -> str:
    return "the answer is 42"


def agent_requests(provider: Any) -> list[ChatRequest]:
    return [r for r in provider.requests if r.operation is OperationType.AGENT]


async def test_completed_run_streams_text_and_persists_the_trace(
    scripted, make_kernel, db, run_events, only
):
    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("lookup", {})]
        assert request.messages[-1].role is Role.TOOL
        return "The answer is 42."

    provider = scripted(script)
    kernel = make_kernel(provider, db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(
            RunSpec(
                "What is the answer?",
                config=AgentConfig(),
                context=RunContext(user_id="anna", timezone="Europe/Zurich"),
                tools=[tool("lookup", lookup)],
            ),
        )
    )
    assert [e.type for e in events[-2:]] == [EventType.FINAL, EventType.AGENT_SUMMARY]
    assert "".join(e.text for e in only(events, EventType.CHUNK)) == "The answer is 42."
    assert events[-2].text == "The answer is 42."
    summary = events[-1].data
    assert summary["status"] == "completed" and summary["rounds"] == 2
    assert summary["toolCalls"] == 1 and summary["costChf"] > 0
    # the temporal block in the user's zone is in the system prompt
    assert "Europe/Zurich" in provider.requests[0].messages[0].text
    trace = await load_trace(db, summary["runId"])
    assert trace is not None and trace.status is AgentStatus.COMPLETED
    assert [c.tool_name for c in trace.tool_calls] == ["lookup"]
    assert trace.final_text == "The answer is 42." and trace.context.user_id == "anna"
    assert [t.run_id for t in await list_traces(db, user_id="anna")] == [summary["runId"]]


async def test_max_rounds_ends_with_a_real_progress_report(scripted, make_kernel, db, run_events):
    def script(request: ChatRequest, i: int) -> Any:
        if not request.tools:  # the closing call has the tools switched off
            return "Progress: looked it up twice, found 42; still need to verify."
        return [("lookup", {"q": i})] if False else [("lookup", {})]

    provider = scripted(script)
    kernel = make_kernel(provider, db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(
            RunSpec(
                "Find it",
                config=AgentConfig(max_rounds=2, stream=False),
                context=RunContext(),
                tools=[tool("lookup", lookup)],
            ),
        )
    )
    assert events[-1].data["status"] == "maxRoundsReached"
    assert events[-2].text.startswith("Progress: looked it up twice")
    last = provider.requests[-1]
    assert last.tools == [] and "progress report" in last.messages[-1].text
    assert len(agent_requests(provider)) == 3  # two rounds + the report


async def test_budget_stop_reports_progress_within_the_budget(
    scripted, make_kernel, db, run_events
):
    def script(request: ChatRequest, i: int) -> Any:
        if not request.tools:
            return "Progress: one lookup done."
        return ChatResponse(
            tool_calls=[ToolCall(id=f"c{i}", name="lookup", arguments="{}")],
            usage=Usage(input_tokens=100, output_tokens=600),
        )

    # 100 CHF / 1000 CHF per million tokens: one round costs 0.61 CHF; the next round's
    # estimate (1000 output tokens) no longer fits 1.5 CHF, the short report does
    provider = scripted(script, price_input=100.0, price_output=1000.0)
    kernel = make_kernel(provider, db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(
            RunSpec(
                "Find it",
                config=AgentConfig(max_cost_chf=1.5, stream=False),
                context=RunContext(),
                tools=[tool("lookup", lookup)],
            ),
        )
    )
    summary = events[-1].data
    assert summary["status"] == "budgetExceeded"
    assert events[-2].text == "Progress: one lookup done."
    assert summary["costChf"] <= 1.5
    assert summary["rounds"] == 2 and summary["toolCalls"] == 1


async def test_unknown_price_fails_closed_without_calling_the_model(
    scripted, make_kernel, db, run_events
):
    provider = scripted(lambda r, i: "never", price_input=None, price_output=None)
    kernel = make_kernel(provider, db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(
            RunSpec(
                "Count the files",
                config=AgentConfig(max_cost_chf=10.0),
                context=RunContext(),
                tools=[],
            ),
        )
    )
    assert events[-1].data["status"] == "budgetExceeded"
    assert provider.requests == []
    assert "Count the files" in events[-2].text  # progress built from the trace


async def test_provider_error_ends_in_error_with_the_reason(scripted, make_kernel, db, run_events):
    def script(request: ChatRequest, i: int) -> Any:
        raise ProviderBadRequestError("context too long", provider="scripted")

    kernel = make_kernel(scripted(script), db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(RunSpec("hi", config=AgentConfig(), context=RunContext(), tools=[]))
    )
    assert events[-1].data["status"] == "error"
    assert "context too long" in events[-1].data["error"]
    assert any(e.type is EventType.ERROR for e in events)
    trace = await load_trace(db, events[-1].data["runId"])
    assert trace.status is AgentStatus.ERROR


async def test_malformed_arguments_are_repaired_and_counted(
    scripted, make_kernel, db, run_events, only
):
    notes: list[str] = []

    async def note(args: NoteArgs, ctx: ToolContext) -> str:
        notes.append(args.text * args.count)
        return "noted"

    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [ToolCall(id="a", name="note", arguments='{"text": "x", "count": ')]
        if i == 1:
            error = request.messages[-1].text
            assert "INVALID_JSON" in error and "arguments schema" in error  # schema came back
            return [("note", {"text": "x", "count": "many"})]
        if i == 2:
            assert "INVALID_TYPE" in request.messages[-1].text
            return [("note", {"text": "x", "count": 2})]
        return "done"

    kernel = make_kernel(scripted(script), db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(
            RunSpec(
                "note it",
                config=AgentConfig(),
                context=RunContext(),
                tools=[tool("note", note, args=NoteArgs, read_only=False)],
            ),
        )
    )
    assert notes == ["xx"]
    results = only(events, EventType.TOOL_RESULT)
    assert [r.data["success"] for r in results] == [False, False, True]
    summary = events[-1].data
    assert (
        summary["validationFailures"],
        summary["repairAttempts"],
        summary["successAfterRepair"],
    ) == (2, 2, 1)
    trace = await load_trace(db, summary["runId"])
    assert [c.validation_failure_code for c in trace.tool_calls] == [
        "INVALID_JSON",
        "INVALID_TYPE",
        None,
    ]
    assert (trace.validation_failures, trace.repair_attempts, trace.success_after_repair) == (
        2,
        2,
        1,
    )


async def test_a_tool_marking_validation_failure_is_counted(scripted, make_kernel, db, run_events):
    async def query(args: BaseModel, ctx: ToolContext) -> ToolResult:
        result = ToolResult.fail("no such field", "CUSTOM_CHECK", field="amount")
        result.data = {"validationFailure": True}
        return result

    def script(request: ChatRequest, i: int) -> Any:
        return [("query", {})] if i == 0 else "ok"

    kernel = make_kernel(scripted(script), db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(
            RunSpec("q", config=AgentConfig(), context=RunContext(), tools=[tool("query", query)]),
        )
    )
    trace = await load_trace(db, events[-1].data["runId"])
    assert trace.tool_calls[0].validation_failure_code == "CUSTOM_CHECK"
    assert trace.validation_failures == 1 and trace.repair_attempts == 0


async def test_request_toolbox_makes_its_tools_visible_next_round(
    scripted, make_kernel, db, run_events, toolbox_plugin
):
    ran: list[str] = []

    async def send(args: BaseModel, ctx: ToolContext) -> str:
        ran.append("sent")
        return "sent"

    extra = Toolbox(id="mail", tools=[tool("sendMail", send, read_only=False)])
    base = Toolbox(id="base", tools=[tool("lookup", lookup)], default_active=True)

    def script(request: ChatRequest, i: int) -> Any:
        names = [t.name for t in request.tools]
        if i == 0:
            assert "sendMail" not in names
            enum = next(t for t in request.tools if t.name == "requestToolbox").parameters
            assert enum["properties"]["toolboxId"]["enum"] == ["mail"]
            return [("requestToolbox", {"toolboxId": "mail", "reason": "must send"})]
        if i == 1:
            assert "sendMail" in names and "requestToolbox" not in names
            return [("sendMail", {})]
        return "mail sent"

    kernel = make_kernel(scripted(script), toolbox_plugin(base, extra), db=db, builtins=False)
    events = await run_events(kernel.agent.run("send it"))
    assert ran == ["sent"]
    assert events[0].data["toolboxes"] == ["base"]
    assert events[-1].data["status"] == "completed"


async def test_knowledge_failures_never_stop_the_run(scripted, make_kernel, db, run_events):
    seen: list[str] = []

    async def builder(prompt: str, context: RunContext) -> str:
        raise RuntimeError("embedding API down")

    handed: list[Any] = []

    async def recorder(**kw: Any) -> None:
        seen.append(kw["round"])
        handed.extend(kw["tool_results"])
        raise RuntimeError("round memory down")

    def script(request: ChatRequest, i: int) -> Any:
        return [("lookup", {})] if i == 0 else "fine"

    kernel = make_kernel(scripted(script), db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(
            RunSpec(
                "q",
                config=AgentConfig(),
                context=RunContext(),
                tools=[tool("lookup", lookup)],
                context_builder=builder,
                round_recorder=recorder,
            ),
        )
    )
    assert events[-1].data["status"] == "completed" and seen == [1]
    assert any(e.data.get("status") == "contextFailed" for e in events)
    # the recorder got the round's tool result typed, not as a dict with wire keys
    assert [(r.tool_name, r.success) for r in handed] == [("lookup", True)]
    assert all(isinstance(r, RoundToolResult) for r in handed)
    # the text it kept is the one the model got (made once, handed on)
    sent = [e.text for e in events if e.type is EventType.TOOL_RESULT]
    assert [r.content for r in handed] == sent and sent[0]


async def test_knowledge_context_is_injected_each_round(scripted, make_kernel, db, run_events):
    async def builder(prompt: str, context: RunContext) -> str:
        return f"Fact for {context.user_id}: the office is in Bern."

    provider = scripted(lambda r, i: "ok")
    kernel = make_kernel(provider, db=db, builtins=False)
    await run_events(
        kernel.agent.loop(
            RunSpec(
                "where?",
                config=AgentConfig(),
                context=RunContext(user_id="anna"),
                tools=[],
                context_builder=builder,
            ),
        )
    )
    texts = [m.text for m in provider.requests[0].messages]
    assert any("Fact for anna: the office is in Bern." in t for t in texts)


async def test_long_conversations_are_summarized_without_orphaned_results(
    scripted, make_kernel, db, run_events, only
):
    calls: list[int] = []

    async def big(args: BaseModel, ctx: ToolContext) -> str:
        return f"chunk {ctx.round}: " + "lorem ipsum " * 300

    def script(request: ChatRequest, i: int) -> Any:
        if request.operation is OperationType.DATA_ANALYSE:
            return "Earlier: read chunks 1-3, nothing relevant."
        calls.append(i)
        part = f'{{"part": {i}}}'  # distinct arguments: not a repeated call
        return [ToolCall(id=f"c{i}", name="big", arguments=part)] if len(calls) < 10 else "done"

    provider = scripted(script, context_window=6000)
    kernel = make_kernel(provider, db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(
            RunSpec(
                "read everything",
                config=AgentConfig(stream=False),
                context=RunContext(),
                tools=[tool("big", big, args=PartArgs)],
            ),
        )
    )
    assert events[-1].data["status"] == "completed"
    assert any(e.data.get("status") == "summarizing" for e in only(events, EventType.STATUS))
    summaries = [r for r in provider.requests if r.operation is OperationType.DATA_ANALYSE]
    assert summaries
    after = agent_requests(provider)[-1]
    assert any("Earlier: read chunks 1-3" in m.text for m in after.messages)
    for request in agent_requests(provider):
        asked: set[str] = set()
        for m in request.messages:
            asked |= {c.id for c in m.tool_calls}
            if m.role is Role.TOOL:
                assert m.tool_call_id in asked  # never a result without its call


class EmailFinder:
    id = "test-email"

    def find(self, text: str) -> list[Finding]:
        return [
            Finding(start=m.start(), end=m.end(), category="EMAIL", value=m.group(0))
            for m in re.finditer(r"[\w.]+@[\w.]+\.\w+", text)
        ]


class NeutralizerPlugin:
    @hookimpl
    def nyla_neutralizers(self) -> list[Any]:
        return [EmailFinder()]


async def test_personal_data_never_reaches_the_model(scripted, make_kernel, db, run_events):
    async def contact(args: BaseModel, ctx: ToolContext) -> str:
        return "Contact: bruno@example.org"

    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("contact", {})]
        placeholders = re.findall(r"\[EMAIL_\d\]", request.messages[-1].text)
        return f"Write to {placeholders[0]}."

    provider = scripted(script)
    kernel = make_kernel(provider, NeutralizerPlugin(), db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(
            RunSpec(
                "Who handles anna@example.com?",
                config=AgentConfig(),
                context=RunContext(require_neutralization=True),
                tools=[tool("contact", contact)],
            ),
        )
    )
    sent = " ".join(m.text for r in provider.requests for m in r.messages)
    assert "anna@example.com" not in sent and "bruno@example.org" not in sent
    assert "[EMAIL_1]" in sent and "[EMAIL_2]" in sent  # stable placeholders per run
    assert events[-2].text == "Write to bruno@example.org."  # re-personalized for the user


async def test_cancel_stops_a_running_tool_and_records_cancelled(
    scripted, make_kernel, db, run_events
):
    started = asyncio.Event()
    never = asyncio.Event()

    async def slow(args: BaseModel, ctx: ToolContext) -> str:
        started.set()
        await never.wait()
        return "unreachable"

    def script(request: ChatRequest, i: int) -> Any:
        return [("slow", {})]

    kernel = make_kernel(
        scripted(script),
        ToolboxPlugin(Toolbox(id="t", tools=[tool("slow", slow)], default_active=True)),
        db=db,
        builtins=False,
    )
    events: list[Any] = []

    async def consume() -> None:
        async for event in kernel.agent.run("wait"):
            events.append(event)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 10)
    run_id = events[0].data["runId"]
    assert kernel.agent.running == [run_id]
    assert kernel.agent.cancel(run_id) is True
    await asyncio.wait_for(task, 10)
    assert events[-1].data["status"] == "cancelled"
    assert kernel.agent.running == []
    trace = await load_trace(db, run_id)
    assert trace.status is AgentStatus.CANCELLED and trace.tool_calls == []
    assert kernel.agent.cancel(run_id) is False


async def test_consumer_closing_the_stream_still_records_a_whole_trace(scripted, make_kernel, db):
    kernel = make_kernel(scripted(lambda r, i: [("lookup", {})]), db=db, builtins=False)
    stream = kernel.agent.loop(
        RunSpec(
            "loop",
            config=AgentConfig(),
            context=RunContext(),
            tools=[tool("lookup", lookup)],
            run_id="closed-run",
        ),
    )
    async for event in stream:
        if event.type is EventType.TOOL_RESULT:
            break
    await stream.aclose()
    trace = await load_trace(db, "closed-run")
    assert trace.status is AgentStatus.CANCELLED
    assert [c.tool_name for c in trace.tool_calls] == ["lookup"]


class NoWritesPolicy:
    """A policy plugin: denies every tool that is not read-only."""

    @hookimpl
    def nyla_before_tool_call(self, tool: Any, arguments: dict, context: Any) -> Any:
        if not tool.read_only:
            return ToolResult(
                success=False, error=f"{tool.name} is not allowed for {context.run.user_id}"
            )
        return None


async def test_a_policy_plugin_denial_reaches_the_model(
    scripted, make_kernel, db, run_events, only
):
    wrote: list[str] = []

    async def write(args: BaseModel, ctx: ToolContext) -> str:
        wrote.append("x")
        return "written"

    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("lookup", {}), ("write", {})]
        assert "not allowed for anna" in request.messages[-1].text
        return "could not write"

    kernel = make_kernel(scripted(script), NoWritesPolicy(), db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(
            RunSpec(
                "write",
                config=AgentConfig(),
                context=RunContext(user_id="anna"),
                tools=[tool("lookup", lookup), tool("write", write, read_only=False)],
            ),
        )
    )
    assert wrote == []
    results = only(events, EventType.TOOL_RESULT)
    assert [(r.data["success"], (r.data["errorDetails"] or {}).get("code")) for r in results] == [
        (True, None),
        (False, "DENIED"),
    ]
