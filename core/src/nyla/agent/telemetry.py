"""OpenTelemetry spans of agent runs, built in one place from the events every run streams:
a run span (``invoke_agent nyla``), a span per round under it and a span per tool call
(``execute_tool <name>``) under its round, with the GenAI semantic conventions' attributes
(``gen_ai.request.model``, ``gen_ai.usage.input_tokens``/``output_tokens``) and nyla's
(``nyla.cost_chf``, ``nyla.status``, ...). No text of the run (prompt, arguments, answers) goes
into an attribute.

Off unless an OTLP endpoint is configured (``NYLA_OTEL_EXPORTER_OTLP_ENDPOINT``, or the
standard ``OTEL_EXPORTER_OTLP_ENDPOINT``/``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) or a test
installs a tracer provider; off, :func:`traced` hands the events back untouched and
``opentelemetry`` is never imported."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncGenerator
from typing import Any

from nyla.agent.spec import RunSpec
from nyla.models.agent import AgentEvent, EventType

#: variables that switch tracing on: nyla's own endpoint first, then OpenTelemetry's
ENDPOINT_VARIABLES = (
    "NYLA_OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)
#: seconds the OTLP exporter waits for the collector
EXPORT_TIMEOUT_S = 10

log = logging.getLogger(__name__)

_provider: Any = None
_missing_warned = False


def use_tracer_provider(provider: Any) -> None:
    """Trace runs into ``provider`` (an SDK ``TracerProvider``; ``None`` turns tracing off
    again unless an endpoint is configured)."""
    global _provider
    _provider = provider


def _configured_provider() -> Any:
    """The provider runs are traced into, made from the environment on first use; ``None``
    when tracing is off."""
    global _provider
    if _provider is not None:
        return _provider
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return None
    if not any(os.environ.get(name) for name in ENDPOINT_VARIABLES):
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        global _missing_warned
        if not _missing_warned:
            _missing_warned = True
            log.warning(
                "an OTLP endpoint is set but OpenTelemetry is not installed: pip install 'nyla[otel]'; runs are not traced"
            )
        return None

    own = os.environ.get("NYLA_OTEL_EXPORTER_OTLP_ENDPOINT")
    endpoint = f"{own.rstrip('/')}/v1/traces" if own else None
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "nyla")})
    provider = TracerProvider(resource=resource)
    timeout = None if os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT") else EXPORT_TIMEOUT_S
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    _provider = provider
    return provider


def traced(
    spec: RunSpec, events: AsyncGenerator[AgentEvent, None]
) -> AsyncGenerator[AgentEvent, None]:
    """``events`` of the run ``spec``, traced when tracing is on (else ``events`` itself)."""
    provider = _configured_provider()
    if provider is None:
        return events
    return _RunSpans(provider, spec).follow(events)


class _RunSpans:
    """The open spans of one run, moved along by its events."""

    def __init__(self, provider: Any, spec: RunSpec) -> None:
        from opentelemetry import trace

        self.trace = trace
        self.tracer = provider.get_tracer("nyla.agent")
        self.spec = spec
        self.run: Any = None
        self.round: Any = None
        self.tools: dict[str, Any] = {}

    def _child(self, name: str, parent: Any, **attributes: Any) -> Any:
        context = self.trace.set_span_in_context(parent)
        clean = {k: v for k, v in attributes.items() if v is not None}
        return self.tracer.start_span(name, context=context, attributes=clean)

    async def follow(
        self, events: AsyncGenerator[AgentEvent, None]
    ) -> AsyncGenerator[AgentEvent, None]:
        model = self.spec.config.model
        self.run = self.tracer.start_span(
            "invoke_agent nyla",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "nyla",
                **({"gen_ai.request.model": model} if model else {}),
                "nyla.max_rounds": self.spec.config.max_rounds,
            },
        )
        try:
            async for event in events:
                self._take(event)
                yield event
        except BaseException as exc:
            self.run.record_exception(exc)
            self.run.set_status(self.trace.StatusCode.ERROR, type(exc).__name__)
            raise
        finally:
            # a consumer that stops early closes this generator: close the run's own now (its
            # cleanup must not wait for the garbage collector)
            await events.aclose()
            self._end_round()
            self.run.end()

    def _end_round(self) -> None:
        for span in self.tools.values():
            span.set_attribute("nyla.tool.finished", False)
            span.end()
        self.tools.clear()
        if self.round is not None:
            self.round.end()
            self.round = None

    def _take(self, event: AgentEvent) -> None:
        data = event.data
        if event.type is EventType.STATUS and data.get("status") == "started":
            self.run.set_attribute("nyla.run.id", str(data.get("runId")))
        elif event.type is EventType.STATUS and data.get("status") == "round":
            self._end_round()
            self.round = self._child(
                f"nyla.round {event.round}", self.run, **{"nyla.round": event.round}
            )
        elif event.type is EventType.TOOL_CALL:
            name = str(data.get("toolName"))
            self.tools[str(data.get("callId"))] = self._child(
                f"execute_tool {name}",
                self.round or self.run,
                **{
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": str(data.get("callId")),
                    "nyla.tool.read_only": bool(data.get("readOnly")),
                },
            )
        elif event.type is EventType.TOOL_RESULT:
            span = self.tools.pop(str(data.get("callId")), None)
            if span is not None:
                span.set_attribute("nyla.tool.success", bool(data.get("success")))
                if not data.get("success"):
                    span.set_status(self.trace.StatusCode.ERROR, "the tool call failed")
                span.end()
        elif event.type is EventType.ERROR:
            self.run.set_status(self.trace.StatusCode.ERROR, "the run failed")
        elif event.type is EventType.AGENT_SUMMARY:
            self._summary(data)

    def _summary(self, data: dict[str, Any]) -> None:
        attributes = {
            "gen_ai.response.model": data.get("model"),
            "gen_ai.usage.input_tokens": data.get("inputTokens"),
            "gen_ai.usage.output_tokens": data.get("outputTokens"),
            "nyla.cost_chf": data.get("costChf"),
            "nyla.rounds": data.get("rounds"),
            "nyla.tool_calls": data.get("toolCalls"),
            "nyla.status": data.get("status"),
        }
        for key, value in attributes.items():
            if value is not None:
                self.run.set_attribute(key, value)
