"""The AI service's side of tracing: each finished chat call and embedding goes to the traced
run it was made in (:func:`nyla.tracing.listening`), which puts a ``chat <model>`` span under
its round; outside a run (``nyla ai ask``, summaries, indexing's embeddings) it becomes a span
of its own under the current one, when tracing is on. Nothing is built when it is off."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from nyla.config import settings_fingerprint
from nyla.models.ai import AiCallRequest, AiCallResponse, ChatResponse, ModelSpec, Usage
from nyla.tracing import ModelCall, capture_content, report_model_call, tracing_model_calls

if TYPE_CHECKING:
    from nyla.ai.route import Route

#: characters of neutralised prompt or answer a span carries at most
CONTENT_CHARS = 8_000

#: the settings' fingerprint and whether the operator opted in to content under it
_opt_in: tuple[tuple[int, int], bool] | None = None


def _capturing() -> bool:
    """:func:`~nyla.tracing.capture_content`, read again only when a setting may have
    changed (:func:`~nyla.config.settings_fingerprint`, pinned for one model call): reading
    the environment cost ~8k instructions a call, the fingerprint ~1k."""
    global _opt_in
    fingerprint = settings_fingerprint()
    kept = _opt_in
    if kept is None or kept[0] != fingerprint:
        kept = _opt_in = (fingerprint, capture_content())
    return kept[1]


def report_call(
    request: AiCallRequest, route: Route, spec: ModelSpec, raw: ChatResponse, out: AiCallResponse
) -> None:
    """Hand the finished call ``out`` of ``spec`` (``raw``: the provider's answer, still
    neutralised) to the listening run, else to a span of its own (when tracing is on)."""
    if not tracing_model_calls():
        return
    prompt = answer = None
    # text only when the operator asked for it and every neutralizer ran over it cleanly
    if _capturing() and route.gate.neutralizers and not route.gate.errors:
        texts = (f"{m.role}: {route.gate.apply(m.text, route.session)}" for m in request.messages)
        prompt = "\n".join(texts)[-CONTENT_CHARS:]
        answer = raw.content[:CONTENT_CHARS]
    report_model_call(
        ModelCall(
            # (an OperationType is a StrEnum: str() is its value, without the property's frame)
            operation=str(request.operation),
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


def report_embedding(
    operation: str, route: Route, spec: ModelSpec, usage: Usage, cost_chf: float | None
) -> None:
    """Hand a finished embedding of ``spec`` (all its batches) on as an ``embeddings <model>``
    call, as :func:`report_call` does; no text is ever captured."""
    if not tracing_model_calls():
        return
    report_model_call(
        ModelCall(
            operation=operation,
            model=spec.id,
            provider=spec.provider,
            input_tokens=usage.input_tokens,
            output_tokens=0,
            cost_chf=cost_chf,
            duration_ms=(time.time_ns() - route.started_ns) / 1e6,
            finish_reason=None,
            kind="embeddings",
        )
    )
