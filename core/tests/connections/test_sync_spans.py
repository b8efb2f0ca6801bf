"""OpenTelemetry spans of a sync, collected with the SDK's in-memory exporter: a sync run as a
job gives ``nyla.job sync`` with ``nyla.sync <service>`` under it, carrying the item counts of
the sync's result and no name or text of an item; a second sync's span says it indexed nothing new."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nyla import tracing
from nyla.testing.fake_vendor import ConnectorWire
from nyla.testing.walker_contract import USER, WalkerContract

from .example_drive import ExampleDrivePlugin, ExampleDriveWire


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


class TestSyncSpans:
    # the walker contract's kernel, fake vendor and data source, without its tests
    corpus_size = WalkerContract.corpus_size
    corpus = WalkerContract.corpus
    embedder = WalkerContract.embedder
    vendor = WalkerContract.vendor
    kernel = WalkerContract.kernel
    source = WalkerContract.source

    @pytest.fixture
    def plugin(self) -> ExampleDrivePlugin:
        return ExampleDrivePlugin()

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return ExampleDriveWire()

    async def test_a_sync_job_and_its_sync_span(self, spans, kernel, source, corpus) -> None:
        job_id, result = await kernel.sync.run(source, user_id=USER)
        assert result.items_indexed >= 1
        by_name = {s.name: s for s in spans.get_finished_spans()}
        job = by_name["nyla.job sync"]
        (sync_name,) = [n for n in by_name if n.startswith("nyla.sync ")]
        sync = by_name[sync_name]
        assert sync.parent.span_id == job.context.span_id
        assert job.attributes["nyla.job.id"] == job_id
        assert job.attributes["nyla.job.kind"] == "sync"
        assert sync_name == f"nyla.sync {sync.attributes['nyla.sync.source']}"
        assert sync.attributes["nyla.data_source.id"] == source
        assert sync.attributes["nyla.sync.items_indexed"] == result.items_indexed
        assert sync.attributes["nyla.sync.items_seen"] == result.items_seen == len(corpus.live())
        assert sync.attributes["nyla.sync.chunks_written"] == result.chunks_written > 0
        assert sync.attributes["nyla.sync.errors"] == 0
        assert sync.status.status_code.name == "UNSET"
        dumped = json.dumps([dict(s.attributes) for s in spans.get_finished_spans()])
        assert not any(doc.name in dumped for doc in corpus.live())

        spans.clear()
        _, second = await kernel.sync.run(source, user_id=USER)
        (again,) = [s for s in spans.get_finished_spans() if s.name == sync_name]
        assert again.attributes["nyla.sync.items_indexed"] == second.items_indexed == 0
        assert again.attributes["nyla.sync.items_seen"] == second.items_seen

    async def test_a_failing_job_span_is_an_error(self, spans, kernel) -> None:
        async def job(handle):
            raise RuntimeError("the job broke")

        with pytest.raises(RuntimeError):
            await kernel.jobs.run("maintenance", job, user_id=USER)
        (span,) = spans.get_finished_spans()
        assert span.name == "nyla.job maintenance"
        assert span.status.status_code.name == "ERROR"
