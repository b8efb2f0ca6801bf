"""Model calls made outside an agent run (``nyla ai ask``, a summary, indexing's embeddings)
get GenAI-convention spans of their own, collected with the SDK's in-memory exporter: a
``chat <model>`` span with tokens, cost and no text, an ``embeddings <model>`` span under the
span it was made in (a sync's, a job's), and not traced at all when tracing is off."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nyla import tracing
from nyla.models.agent import RunContext
from nyla.models.ai import AiCallRequest, Message, OperationType, Role

SECRET = "Anna Muster lives at Bahnhofstrasse 1"


def _embed(texts: list[str]) -> list[list[float]]:
    return [[float(len(t)), 1.0, 0.0] for t in texts]


def _kernel(make_kernel, scripted, db):
    provider = scripted(lambda request, i: f"answer {i}", embed_fn=_embed)
    return make_kernel(provider, db=db, builtins=False)


def _exporter():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_tracer_provider(provider)
    return exporter


async def test_a_chat_call_and_an_embedding_outside_a_run_are_spans(make_kernel, scripted, db):
    kernel = _kernel(make_kernel, scripted, db)
    context = RunContext(user_id="anna")
    exporter = _exporter()
    try:
        answer = await kernel.ai.call(
            AiCallRequest(
                operation=OperationType.DATA_ANALYSE,
                messages=[Message(role=Role.USER, content=f"Summarise: {SECRET}")],
                context=context,
                model="scripted:model",
            )
        )
        with tracing.span("nyla.sync test", "nyla.test"):
            vectors = await kernel.ai.embed(
                ["one text", "another text"], context=context, model="scripted:model"
            )
    finally:
        tracing.use_tracer_provider(None)
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"chat scripted:model", "embeddings scripted:model", "nyla.sync test"}
    chat = spans["chat scripted:model"]
    assert chat.parent is None  # a call of its own, not part of any run
    attrs = dict(chat.attributes)
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "scripted:model"
    assert attrs["gen_ai.usage.input_tokens"] == answer.usage.input_tokens > 0
    assert attrs["gen_ai.usage.output_tokens"] == answer.usage.output_tokens > 0
    assert attrs["nyla.operation"] == OperationType.DATA_ANALYSE.value
    assert not any(SECRET in str(v) or "Anna" in str(v) for v in attrs.values())
    embedding = spans["embeddings scripted:model"]
    assert embedding.parent.span_id == spans["nyla.sync test"].context.span_id
    e_attrs = dict(embedding.attributes)
    assert e_attrs["gen_ai.operation.name"] == "embeddings"
    assert e_attrs["gen_ai.usage.input_tokens"] == vectors.usage.input_tokens > 0
    assert "gen_ai.usage.output_tokens" not in e_attrs
    assert embedding.start_time <= embedding.end_time


def test_model_calls_are_not_traced_without_a_provider_or_endpoint(monkeypatch):
    for name in tracing.ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    tracing.use_tracer_provider(None)
    assert not tracing.tracing_model_calls()
    with tracing.listening(lambda call: None):  # a traced run listens: its calls are traced
        assert tracing.tracing_model_calls()


class _CountingEnviron(dict):
    """``os.environ`` as tracing sees it, counting the variables read."""

    reads = 0

    def get(self, key, default=None):
        type(self).reads += 1
        return super().get(key, default)


def test_off_tracing_reads_the_environment_again_only_once_it_changed(monkeypatch):
    import os
    import types

    for name in (*tracing.ENDPOINT_VARIABLES, "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    tracing.use_tracer_provider(None)
    counting = _CountingEnviron(os.environ)
    monkeypatch.setattr(tracing, "os", types.SimpleNamespace(environ=counting))
    assert tracing.tracer_provider() is None
    before = _CountingEnviron.reads
    for _ in range(5):  # every model call asks
        assert tracing.tracer_provider() is None
    assert _CountingEnviron.reads == before
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")  # a change: read again, still off
    assert tracing.tracer_provider() is None
    assert _CountingEnviron.reads > before
