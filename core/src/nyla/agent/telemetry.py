"""OpenTelemetry spans of agent runs, built in one place from the events every run streams
and the model calls the AI service reports while the run is traced: a run span
(``invoke_agent nyla``), a span per round under it, and under its round a span per model call
(``chat <model>``) and per tool call (``execute_tool <name>``), with the GenAI semantic
conventions' attributes (``gen_ai.request.model``, ``gen_ai.usage.input_tokens``/
``output_tokens``) and nyla's (``nyla.cost_chf``, ``nyla.status``, ...). No text of the run
goes into an attribute unless the operator opts in (:func:`nyla.tracing.capture_content`),
and then only the neutralised text the model saw.

On and off as :mod:`nyla.tracing` says; off, :func:`traced` hands the events back untouched
and ``opentelemetry`` is never imported."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from nyla import tracing
from nyla.agent.spec import RunSpec
from nyla.models.agent import AgentEvent, EventType


def traced(
    spec: RunSpec, events: AsyncGenerator[AgentEvent, None]
) -> AsyncGenerator[AgentEvent, None]:
    """``events`` of the run ``spec``, traced when tracing is on (else ``events`` itself)."""
    provider = tracing.tracer_provider()
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
            while True:
                # the model calls made while the run works on its next event are this run's
                with tracing.listening(self._model_call):
                    try:
                        event = await events.__anext__()
                    except StopAsyncIteration:
                        break
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

    def _model_call(self, call: tracing.ModelCall) -> None:
        """A ``chat <model>`` span under the current round, timed by the call's duration."""
        context = self.trace.set_span_in_context(self.round or self.run)
        tracing.model_call_span(self.tracer, call, context)

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
