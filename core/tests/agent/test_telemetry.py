"""OpenTelemetry spans of an agent run, collected with the SDK's in-memory exporter: a run of
two rounds and three tool calls gives the run span, a span per round under it and a span per
model call and per tool call under its round, with the GenAI attributes and no text of the
run (with the operator's opt-in only neutralised text); with tracing not configured, no
``opentelemetry`` module is imported at all."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from typing import Any, ClassVar

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from nyla import tracing
from nyla.agent import events, telemetry
from nyla.agent.spec import RunSpec
from nyla.ai import default_neutralizer
from nyla.models.agent import AgentConfig, EventType, RunContext
from nyla.models.ai import ChatRequest
from nyla.models.tools import Tool, Toolbox, ToolContext
from nyla.testing.helpers import ToolboxPlugin

SECRET = "Anna Muster lives at Bahnhofstrasse 1"
#: what the default neutralizer finds all of (the opt-in is only as good as the neutralizers)
SECRET_DE = "Frau Anna Muster wohnt an der Bahnhofstrasse 1, 8001 Zürich"


class Query(BaseModel):
    q: str


async def lookup(args: Query, ctx: ToolContext) -> str:
    return f"found {args.q}"


async def broken(args: Query, ctx: ToolContext) -> str:
    raise RuntimeError("down")


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_tracer_provider(provider)
    try:
        yield exporter
    finally:
        tracing.use_tracer_provider(None)


@pytest.mark.parametrize("stream", [True, False])
async def test_a_run_of_two_rounds_and_three_tool_calls(
    spans, scripted, make_kernel, db, run_events, only, stream
):
    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("lookup", {"q": SECRET}), ("lookup", {"q": "b"}), ("broken", {"q": "c"})]
        return "Done."

    tools = [Tool.from_model(n, n, Query, h) for n, h in (("lookup", lookup), ("broken", broken))]
    box = Toolbox(id="t", tools=tools, default_active=True)
    kernel = make_kernel(scripted(script), ToolboxPlugin(box), db=db, builtins=False)
    events = await run_events(
        kernel.agent.run(
            SECRET, AgentConfig(model="scripted:model", stream=stream), RunContext(user_id="anna")
        )
    )
    assert len(only(events, EventType.TOOL_RESULT)) == 3

    finished = spans.get_finished_spans()
    by_name: dict[str, list[Any]] = {}
    for span in finished:
        by_name.setdefault(span.name, []).append(span)
    (run,) = by_name["invoke_agent nyla"]
    rounds = sorted(by_name["nyla.round 1"] + by_name["nyla.round 2"], key=lambda s: s.start_time)
    tools_done = by_name["execute_tool lookup"] + by_name["execute_tool broken"]
    chats = sorted(by_name["chat scripted:model"], key=lambda s: s.start_time)
    assert len(finished) == 1 + 2 + 2 + 3
    assert run.parent is None
    assert all(r.parent.span_id == run.context.span_id for r in rounds)
    assert all(t.parent.span_id == rounds[0].context.span_id for t in tools_done)
    # one model call per round, under its round, before the round's tool calls
    assert [c.parent.span_id for c in chats] == [r.context.span_id for r in rounds]
    assert all(c.end_time <= t.start_time for c in chats[:1] for t in tools_done)
    assert all(
        r.start_time <= c.start_time <= c.end_time <= r.end_time
        for c, r in zip(chats, rounds, strict=True)
    )
    if stream:  # timed from the route, not a point in time
        assert all(c.end_time > c.start_time for c in chats)
    assert len({s.context.trace_id for s in finished}) == 1

    summary = events[-1].data
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.request.model"] == "scripted:model"
    assert run.attributes["gen_ai.usage.input_tokens"] == summary["inputTokens"] > 0
    assert run.attributes["gen_ai.usage.output_tokens"] == summary["outputTokens"] > 0
    assert run.attributes["nyla.cost_chf"] == summary["costChf"] > 0
    assert run.attributes["nyla.rounds"] == 2 and run.attributes["nyla.tool_calls"] == 3
    assert run.attributes["nyla.run.id"] == summary["runId"]
    assert run.attributes["nyla.status"] == "completed"
    for chat in chats:
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == "scripted:model"
        assert chat.attributes["gen_ai.provider.name"] == "scripted"
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
        assert chat.attributes["nyla.cost_chf"] > 0
        assert "nyla.input.neutralized" not in chat.attributes  # no opt-in
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
        assert sum(c.attributes[key] for c in chats) == run.attributes[key]
    assert sum(c.attributes["nyla.cost_chf"] for c in chats) == pytest.approx(summary["costChf"])
    (failed,) = by_name["execute_tool broken"]
    assert failed.attributes["nyla.tool.success"] is False
    assert failed.status.status_code.name == "ERROR"
    assert all(t.attributes["nyla.tool.success"] for t in by_name["execute_tool lookup"])
    assert {t.attributes["gen_ai.tool.call.id"] for t in tools_done} == {
        e.data["callId"] for e in only(events, EventType.TOOL_CALL)
    }
    # no text of the run in any attribute
    dumped = json.dumps([dict(s.attributes) for s in finished])
    assert "Anna" not in dumped and "Bahnhofstrasse" not in dumped


def test_off_imports_no_opentelemetry():
    code = (
        "import sys, asyncio\n"
        "import nyla.kernel  # noqa\n"
        "from nyla.agent import telemetry\n"
        "from nyla.agent.spec import RunSpec\n"
        "from nyla.models.agent import AgentConfig, RunContext\n"
        "async def events():\n"
        "    yield 1\n"
        "gen = events()\n"
        "assert telemetry.traced(RunSpec('hi', AgentConfig(), RunContext()), gen) is gen\n"
        "from nyla import tracing\n"
        "with tracing.span('nyla.job x', 'nyla.jobs', {'a': 1}) as span:\n"
        "    span.set({'b': 2})\n"
        "assert span.otel is None and tracing.model_call_listener() is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if "OTEL" not in k}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


class _Collector(http.server.BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


async def test_configured_endpoint_exports_over_otlp_http(monkeypatch):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    server = http.server.HTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("NYLA_OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "nyla-test")
    tracing.use_tracer_provider(None)

    async def run() -> Any:
        yield events.status(0, "started", runId="r1")
        yield events.status(1, "round")
        yield events.final(1, "hello", "completed")

    spec = RunSpec("hi", AgentConfig(), RunContext())
    try:
        assert [e.type async for e in telemetry.traced(spec, run())][-1] is EventType.FINAL
        provider = tracing.tracer_provider()
        assert provider.force_flush(10_000)
        provider.shutdown()
    finally:
        tracing.use_tracer_provider(None)
        server.shutdown()
    ((path, body),) = _Collector.received
    assert path == "/v1/traces"
    request = ExportTraceServiceRequest.FromString(body)
    (resource,) = request.resource_spans
    service = {a.key: a.value.string_value for a in resource.resource.attributes}
    assert service["service.name"] == "nyla-test"
    names = sorted(s.name for scope in resource.scope_spans for s in scope.spans)
    assert names == ["invoke_agent nyla", "nyla.round 1"]


async def test_a_consumer_that_stops_early_ends_the_spans_and_closes_the_run(spans):
    closed = []

    async def run() -> Any:
        try:
            yield events.status(0, "started", runId="r2")
            yield events.status(1, "round")
            yield events.final(1, "never read", "completed")
        finally:
            closed.append(True)

    traced = telemetry.traced(RunSpec("hi", AgentConfig(), RunContext()), run())
    async for event in traced:
        if event.round == 1:
            break
    await traced.aclose()
    assert closed == [True]
    assert sorted(s.name for s in spans.get_finished_spans()) == [
        "invoke_agent nyla",
        "nyla.round 1",
    ]


@pytest.mark.parametrize("opt_in", ["", "neutralized"])
@pytest.mark.parametrize("neutralize", [True, False])
async def test_no_personal_data_in_any_attribute_with_or_without_the_opt_in(
    spans, scripted, make_kernel, db, run_events, monkeypatch, opt_in, neutralize
):
    """The opt-in puts the neutralised prompt and answer on the model spans; raw personal
    data reaches no attribute either way, nor when no neutralizer runs (then no text at all)."""
    monkeypatch.setenv("NYLA_OTEL_CAPTURE_CONTENT", opt_in)

    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("lookup", {"q": request.messages[-1].text})]
        return f"I looked up: {request.messages[-1].text}"

    box = Toolbox(id="t", tools=[Tool.from_model("lookup", "lookup", Query, lookup)])
    box.default_active = True
    plugins = [default_neutralizer] if neutralize else []
    kernel = make_kernel(scripted(script), ToolboxPlugin(box), *plugins, db=db, builtins=False)
    await run_events(
        kernel.agent.run(SECRET_DE, AgentConfig(model="scripted:model"), RunContext(user_id="a"))
    )
    finished = spans.get_finished_spans()
    chats = [s for s in finished if s.name.startswith("chat ")]
    assert len(chats) == 2
    dumped = json.dumps([dict(s.attributes) for s in finished])
    assert "Anna" not in dumped and "Muster" not in dumped and "Bahnhofstrasse" not in dumped
    captured = opt_in and neutralize
    for chat in chats:
        assert ("nyla.input.neutralized" in chat.attributes) is bool(captured)
        assert ("nyla.output.neutralized" in chat.attributes) is bool(captured)
    if captured:
        prompt = chats[0].attributes["nyla.input.neutralized"]
        assert "user: Frau [NAME_1] wohnt an der [ADDRESS_1]" in prompt
        answer = chats[1].attributes["nyla.output.neutralized"]
        assert answer == "I looked up: found Frau [NAME_1] wohnt an der [ADDRESS_1]"
