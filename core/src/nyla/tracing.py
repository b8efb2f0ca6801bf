"""OpenTelemetry set-up shared by everything nyla traces (agent runs, model calls, syncs,
jobs): the tracer provider, the operator's content opt-in, a span helper and the hand-over of
model calls from the AI service to whoever traces the call's run.

Off unless an OTLP endpoint is configured (``NYLA_OTEL_EXPORTER_OTLP_ENDPOINT``, or the
standard ``OTEL_EXPORTER_OTLP_ENDPOINT``/``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) or a test
installs a tracer provider; off, nothing here imports ``opentelemetry`` and :func:`span`
hands out a span that records nothing."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from nyla.config import settings_fingerprint

#: variables that switch tracing on: nyla's own endpoint first, then OpenTelemetry's
ENDPOINT_VARIABLES = (
    "NYLA_OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)
#: the operator's opt-in for text in spans; only ``neutralized`` (neutralised text) exists
CAPTURE_VARIABLE = "NYLA_OTEL_CAPTURE_CONTENT"
#: seconds the OTLP exporter waits for the collector
EXPORT_TIMEOUT_S = 10

log = logging.getLogger(__name__)

_provider: Any = None
_missing_warned = False
#: the settings' fingerprint (:func:`nyla.config.settings_fingerprint`) under which the
#: environment was last found to switch tracing off
_off_under: tuple[int, int] | None = None


def use_tracer_provider(provider: Any) -> None:
    """Trace into ``provider`` (an SDK ``TracerProvider``; ``None`` turns tracing off again
    unless an endpoint is configured)."""
    global _provider
    _provider = provider


def tracer_provider() -> Any:
    """The provider spans go to, made from the environment on first use; ``None`` when
    tracing is off."""
    global _provider, _off_under
    if _provider is not None:
        return _provider
    # asked on every model call: the four variables are read again only when the
    # environment changed (~5 us a call before, ~0.5 us for the fingerprint)
    fingerprint = settings_fingerprint()
    if fingerprint == _off_under:
        return None
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true" or not any(
        os.environ.get(name) for name in ENDPOINT_VARIABLES
    ):
        _off_under = fingerprint
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
                "an OTLP endpoint is set but OpenTelemetry is not installed: pip install 'nyla[otel]'; nothing is traced"
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


def capture_content() -> bool:
    """Whether the operator opted in to neutralised text (prompts, answers) in spans."""
    return os.environ.get(CAPTURE_VARIABLE, "").strip().lower() in ("neutralized", "neutralised")


class Span:
    """A span of :func:`span`: attributes set on it (``None`` values left out) reach the
    trace when tracing is on, and go nowhere when it is off."""

    def __init__(self, otel: Any = None) -> None:
        self.otel = otel

    def set(self, attributes: dict[str, Any]) -> None:
        """Set ``attributes`` (those whose value is ``None`` are left out)."""
        if self.otel is None:
            return
        for key, value in attributes.items():
            if value is not None:
                self.otel.set_attribute(key, value)

    def rename(self, name: str) -> None:
        """Give the span its final name (known only once the work started)."""
        if self.otel is not None:
            self.otel.update_name(name)


@contextlib.contextmanager
def span(name: str, scope: str, attributes: dict[str, Any] | None = None) -> Iterator[Span]:
    """A span around the block, under the current one, current inside it; a block that
    raises marks it ERROR. ``attributes`` as in :meth:`Span.set`."""
    provider = tracer_provider()
    if provider is None:
        yield Span()
        return
    tracer = provider.get_tracer(scope)
    with tracer.start_as_current_span(name) as otel:
        out = Span(otel)
        out.set(attributes or {})
        yield out


@dataclass(frozen=True)
class ModelCall:
    """One finished model call as the AI service saw it. ``prompt``/``answer`` are the
    neutralised text that went to and came from the provider, filled only under the
    operator's opt-in (:func:`capture_content`)."""

    operation: str
    model: str
    provider: str
    input_tokens: int
    output_tokens: int
    cost_chf: float | None
    duration_ms: float | None
    finish_reason: str | None
    prompt: str | None = None
    answer: str | None = None
    #: the GenAI operation: ``chat`` or ``embeddings``
    kind: str = "chat"


_model_call_listener: ContextVar[Callable[[ModelCall], None] | None] = ContextVar(
    "nyla_model_call_listener", default=None
)


def model_call_listener() -> Callable[[ModelCall], None] | None:
    """Who traces the model calls made here (the traced run around them), if anyone."""
    return _model_call_listener.get()


@contextlib.contextmanager
def listening(listener: Callable[[ModelCall], None]) -> Iterator[None]:
    """Model calls made inside the block (and in tasks started in it) go to ``listener``."""
    token = _model_call_listener.set(listener)
    try:
        yield
    finally:
        _model_call_listener.reset(token)


def model_call_attributes(call: ModelCall) -> dict[str, Any]:
    """The GenAI semantic conventions' attributes of ``call`` and nyla's (``None`` left out)."""
    attributes = {
        "gen_ai.operation.name": call.kind,
        "gen_ai.request.model": call.model,
        "gen_ai.response.model": call.model,
        "gen_ai.provider.name": call.provider,
        "gen_ai.system": call.provider,
        "gen_ai.usage.input_tokens": call.input_tokens,
        "gen_ai.usage.output_tokens": call.output_tokens if call.kind == "chat" else None,
        "gen_ai.response.finish_reasons": [call.finish_reason] if call.finish_reason else None,
        "nyla.cost_chf": call.cost_chf,
        "nyla.operation": call.operation,
        "nyla.input.neutralized": call.prompt,
        "nyla.output.neutralized": call.answer,
    }
    return {k: v for k, v in attributes.items() if v is not None}


def model_call_span(tracer: Any, call: ModelCall, context: Any = None) -> None:
    """A finished ``<kind> <model>`` span of ``call`` under ``context`` (``None``: the
    current span, if any), timed back from now by the call's duration."""
    import time

    end = time.time_ns()
    start = end - int((call.duration_ms or 0.0) * 1_000_000)
    span = tracer.start_span(
        f"{call.kind} {call.model}",
        context=context,
        attributes=model_call_attributes(call),
        start_time=start,
    )
    span.end(end_time=end)


def tracing_model_calls() -> bool:
    """Whether a finished model call is traced: a traced run listens, or tracing is on (a
    call outside runs, e.g. ``nyla ai ask``, a summary or indexing's embeddings)."""
    return model_call_listener() is not None or tracer_provider() is not None


def report_model_call(call: ModelCall) -> None:
    """Hand ``call`` to the traced run it was made in; outside one, its own span under the
    current span (a sync's or a job's, or none)."""
    listener = model_call_listener()
    if listener is not None:
        listener(call)
        return
    provider = tracer_provider()
    if provider is not None:
        model_call_span(provider.get_tracer("nyla.ai"), call)
