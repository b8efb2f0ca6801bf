"""The AI service's side of tracing: each finished chat call goes to the traced run it was
made in (:func:`nyla.tracing.listening`), which puts a ``chat <model>`` span under its round.
Nothing is built when no run listens."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from nyla.models.ai import AiCallRequest, AiCallResponse, ChatResponse, ModelSpec
from nyla.tracing import ModelCall, capture_content, model_call_listener

if TYPE_CHECKING:
    from nyla.ai.route import Route

#: characters of neutralised prompt or answer a span carries at most
CONTENT_CHARS = 8_000


def report_call(
    request: AiCallRequest, route: Route, spec: ModelSpec, raw: ChatResponse, out: AiCallResponse
) -> None:
    """Hand the finished call ``out`` of ``spec`` (``raw``: the provider's answer, still
    neutralised) to the listening run, if any."""
    listener = model_call_listener()
    if listener is None:
        return
    prompt = answer = None
    # text only when the operator asked for it and every neutralizer ran over it cleanly
    if capture_content() and route.gate.neutralizers and not route.gate.errors:
        texts = (f"{m.role}: {route.gate.apply(m.text, route.session)}" for m in request.messages)
        prompt = "\n".join(texts)[-CONTENT_CHARS:]
        answer = raw.content[:CONTENT_CHARS]
    listener(
        ModelCall(
            operation=str(getattr(request.operation, "value", request.operation)),
            model=spec.id,
            provider=spec.provider,
            input_tokens=out.usage.input_tokens,
            output_tokens=out.usage.output_tokens,
            cost_chf=out.cost_chf,
            # a streamed call has no measured duration: its time through the pipeline
            duration_ms=out.duration_ms
            if out.duration_ms is not None
            else (time.time_ns() - route.started_ns) / 1e6,
            finish_reason=out.finish_reason,
            prompt=prompt,
            answer=answer,
        )
    )
