"""Contract suite for walker plugins: a connector's walker syncing a fake vendor into the
real knowledge store on the embedded PostgreSQL, through the kernel's walker runner.

Subclass :class:`WalkerContract` and override ``plugin`` (a plugin contributing the connector
and its walker) and ``wire`` (the connector's :class:`~nyla.testing.fake_vendor.ConnectorWire`).
Scenarios: everything indexed over several pages and found only by its owner; a second sync
embeds nothing unchanged; changes and deletions reach the index; a truncated listing deletes
nothing; a listing that fails part-way deletes nothing it could not see and says so; a cancel
mid-sync resumes where it stopped without duplicates; limits stop the sync and say why;
consent withdrawn mid-sync purges and stops.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os
import re
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import pytest_asyncio
from sqlalchemy import func, select

from nyla.connections.errors import ConnectorError
from nyla.jobs.runtime import JobHandle
from nyla.models.knowledge import SearchQuery
from nyla.testing.contract_base import PluginContract, _host_for
from nyla.testing.fake_vendor import ConnectorWire, FakeCorpus, FakeVendor

if TYPE_CHECKING:
    from nyla.kernel import Kernel

USER = "walker-user"
DIMS = 32


class CountingEmbedder:
    """A deterministic bag-of-words embedder that counts what it embedded."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        out = []
        for text in texts:
            vec = [0.0] * DIMS
            for word in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
                vec[h % DIMS] += 1.0 if (h >> 32) & 1 else -1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm if any(vec) else 1.0 / math.sqrt(DIMS) for v in vec])
        return out


class _Sleeps:
    async def __call__(self, seconds: float) -> None:
        return None


class WalkerContract(PluginContract):
    """The scenarios every walker passes over a fake of its connector's vendor."""

    corpus_size: int = 7

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        """The connector's wire format. Override."""
        raise NotImplementedError("override the `wire` fixture with your ConnectorWire")

    @pytest.fixture
    def corpus(self, wire: ConnectorWire) -> FakeCorpus:
        """Documents with a distinctive word each."""
        corpus = FakeCorpus(page_size=3)
        for i in range(self.corpus_size):
            corpus.add(
                f"note-{i:02d}.txt", f"Meeting note {i} about topic{i} budget.", wire.scope or "/"
            )
        return corpus

    @pytest.fixture
    def embedder(self) -> CountingEmbedder:
        """The embedder of the test kernel (counts embedded texts)."""
        return CountingEmbedder()

    @pytest.fixture
    def vendor(self, wire: ConnectorWire, corpus: FakeCorpus) -> FakeVendor:
        """The fake vendor."""
        oauth = getattr(wire.adapter(), "oauth", None)
        return FakeVendor(wire, corpus, oauth.token_url if oauth else None, _scheme(wire.adapter()))

    @pytest_asyncio.fixture
    async def kernel(
        self, db: Any, plugin: Any, vendor: FakeVendor, embedder: CountingEmbedder, monkeypatch: Any
    ) -> Any:
        """A kernel with the plugin, a scripted embedding model and the fake vendor."""
        from cryptography.fernet import Fernet

        from nyla.kernel import Kernel
        from nyla.plugins import PluginHost
        from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

        oauth = getattr(vendor.wire.adapter(), "oauth", None)
        if oauth is not None and oauth.client_id_setting:
            monkeypatch.setenv(oauth.client_id_setting, "contract-client")
        provider = ScriptedProvider(lambda request, index: "ok", embed_fn=embedder)
        host = PluginHost.from_plugins(
            [plugin, ScriptedPlugin(provider)], names=["plugin-under-test", "scripted"]
        )
        settings = {
            "secret_key": Fernet.generate_key(),
            "transport": httpx.MockTransport(vendor),
            "sleep": _Sleeps(),
        }
        return Kernel(plugins=host, db=db, settings=settings)

    @pytest_asyncio.fixture
    async def source(self, kernel: Kernel, wire: ConnectorWire) -> str:
        """A data source with indexing on, at the wire's scope; returns its id."""
        adapter = wire.adapter()
        conn = await kernel.connections.add(
            adapter.service, user_id=USER, grant=wire.grant(), settings=wire.settings()
        )
        await kernel.knowledge.governance.add_data_source(
            f"ds-{conn.id}", conn.id, wire.scope or "/", user_id=USER, rag_index_enabled=True
        )
        return f"ds-{conn.id}"

    async def _indexed(self, kernel: Kernel) -> dict[str, int]:
        from nyla.tables.knowledge import FileContentIndex

        async with kernel.db.session() as s:
            rows = await s.execute(
                select(FileContentIndex.file_id, FileContentIndex.chunk_count).where(
                    FileContentIndex.status == "indexed"
                )
            )
            return {file_id.split(":", 1)[1]: n for file_id, n in rows}

    async def _chunks(self, kernel: Kernel) -> int:
        from nyla.tables.knowledge import ContentChunk

        async with kernel.db.session() as s:
            return int(
                (await s.execute(select(func.count()).select_from(ContentChunk))).scalar_one()
            )

    # ---- the scenarios ------------------------------------------------------------------

    def test_walkers_declare_services(self, plugin: Any) -> None:
        host = _host_for(plugin)
        assert host.walkers, "the plugin registers no walker (nyla_walkers)"
        for walker in host.walkers.values():
            assert walker.services, f"walker {walker.id} names no connector service"
            assert walker.limit_kind in ("files", "clickup"), walker.limit_kind
            assert not inspect.iscoroutinefunction(walker.accepts), (
                f"walker {walker.id}: accepts() must be a plain function"
            )

    async def test_sync_indexes_everything_for_its_owner_only(
        self, kernel: Kernel, source: str, corpus: FakeCorpus, wire: ConnectorWire
    ) -> None:
        from nyla.models.agent import RunContext

        _, result = await kernel.sync.run(source, user_id=USER)
        assert result.pages >= 2 and not result.errors, result
        assert set(await self._indexed(kernel)) == {wire.item_id(d) for d in corpus.live()}, (
            "the sync indexed a different set of items than the vendor holds"
        )
        owner = await kernel.knowledge.search(
            SearchQuery(text="topic3", context=RunContext(user_id=USER), k=3)
        )
        assert owner.hits and "topic3" in owner.hits[0].text, (
            "the owner cannot find synced content by search"
        )
        other = await kernel.knowledge.search(
            SearchQuery(text="topic3", context=RunContext(user_id="intruder"))
        )
        assert not other.hits, "synced content leaked to another user"

    async def test_second_sync_embeds_nothing_unchanged(
        self, kernel: Kernel, source: str, embedder: CountingEmbedder
    ) -> None:
        await kernel.sync.run(source, user_id=USER)
        embedded = len(embedder.texts)
        _, again = await kernel.sync.run(source, user_id=USER)
        assert len(embedder.texts) == embedded, "unchanged items were embedded again"
        assert again.items_indexed == 0, f"{again.items_indexed} unchanged items re-indexed"

    async def test_changes_and_deletions_reach_the_index(
        self, kernel: Kernel, source: str, corpus: FakeCorpus, wire: ConnectorWire
    ) -> None:
        await kernel.sync.run(source, user_id=USER)
        changed, gone = corpus.live()[0], corpus.live()[1]
        corpus.change(changed.id, "Meeting note rewritten about zeppelins.")
        corpus.remove(gone.id)
        _, result = await kernel.sync.run(source, user_id=USER)
        indexed = await self._indexed(kernel)
        assert wire.item_id(gone) not in indexed, "a deleted item stayed in the index"
        assert wire.item_id(changed) in indexed, "a changed item left the index"
        assert result.items_indexed >= 1 and result.items_deleted == 1, result

    async def test_a_listing_that_changes_under_the_walker_loses_nothing(
        self, kernel: Kernel, source: str, corpus: FakeCorpus, vendor: FakeVendor, wire: Any
    ) -> None:
        """While the first sync lists, a colleague edits a document already listed, adds one
        and deletes one: the next sync ends with exactly the live documents, the edit's new
        text among them (offset paging that shifts, a cursor taken after the listing began,
        or a sweep keyed to the wrong moment would each lose one)."""
        served, answer = [0], vendor.wire.handle
        edited = corpus.live()[0]
        doomed = corpus.live()[-1]

        def changing(request: httpx.Request, docs: FakeCorpus) -> httpx.Response:
            response = answer(request, docs)
            served[0] += 1
            if served[0] == 1:  # right after the first answer of the listing
                docs.change(edited.id, "Meeting note edited during the listing about walruses.")
                docs.add(
                    "added-later.txt",
                    "Meeting note added meanwhile about lemurs.",
                    wire.scope or "/",
                )
                docs.remove(doomed.id)
            return response

        vendor.wire.handle = changing  # type: ignore[method-assign,assignment]
        try:
            await kernel.sync.run(source, user_id=USER)
        finally:
            vendor.wire.handle = answer  # type: ignore[method-assign,assignment]
        await kernel.sync.run(source, user_id=USER)
        indexed = await self._indexed(kernel)
        assert set(indexed) == {wire.item_id(d) for d in corpus.live()}, "the index drifted"
        from nyla.tables.knowledge import ContentChunk

        async with kernel.db.session() as s:
            texts = (await s.execute(select(ContentChunk.data))).scalars().all()
        assert any("walruses" in t for t in texts), "the edit made during the listing is lost"

    async def test_text_beyond_ascii_arrives_exactly(
        self, kernel: Kernel, source: str, corpus: FakeCorpus, wire: Any
    ) -> None:
        """A name and a text in German, Japanese, Arabic, with an emoji and a combining
        accent: indexed as they were written, not mangled by a decode on the way."""
        text = "Grüsse aus Zürich: Straße, café, 日本語の議事録, تقرير شهري, 👍 and e\u0301"
        doc = corpus.add("Bericht Zürich 日本.txt", text, wire.scope or "/")
        await kernel.sync.run(source, user_id=USER)
        assert wire.item_id(doc) in await self._indexed(kernel)
        from nyla.tables.knowledge import ContentChunk

        async with kernel.db.session() as s:
            texts = (await s.execute(select(ContentChunk.data))).scalars().all()
        for part in (
            "Grüsse aus Zürich",
            "Straße",
            "日本語の議事録",
            "تقرير شهري",
            "👍",
            "e\u0301",
        ):
            assert any(part in t for t in texts), f"{part!r} did not arrive"

    async def test_a_very_long_name_and_id_arrive(
        self, kernel: Kernel, source: str, corpus: FakeCorpus, wire: Any
    ) -> None:
        """A name as long as file systems allow (250 bytes, with multi-byte letters): where
        the vendor's ids are paths (WebDAV, CalDAV, local folders) the id is that long too,
        and the item is indexed and found again unchanged on the next sync."""
        name = ("Sitzungsprotokoll Überbauung Längenstrasse " * 6)[:230] + ".txt"
        assert 240 <= len(name.encode()) <= 255
        doc = corpus.add(name, "Meeting note about a very long name.", wire.scope or "/")
        await kernel.sync.run(source, user_id=USER)
        assert wire.item_id(doc) in await self._indexed(kernel)
        _, again = await kernel.sync.run(source, user_id=USER)
        assert again.items_indexed == 0 and again.items_failed == 0, again

    async def test_a_rename_reaches_the_index(
        self, kernel: Kernel, source: str, corpus: FakeCorpus, wire: Any
    ) -> None:
        """A document renamed at the source is found under its new name after the next sync,
        and is still one item (not a deletion and an addition that lost its history)."""
        from nyla.tables.knowledge import FileContentIndex

        await kernel.sync.run(source, user_id=USER)
        doc = corpus.live()[0]
        corpus.rename(doc.id, "renamed-minutes.txt")
        await kernel.sync.run(source, user_id=USER)
        indexed = await self._indexed(kernel)
        assert set(indexed) == {wire.item_id(d) for d in corpus.live()}
        async with kernel.db.session() as s:
            names = (await s.execute(select(FileContentIndex.name))).scalars().all()
        assert any("renamed-minutes" in n for n in names), names

    async def test_a_feed_that_reports_deletions_needs_no_id_listing(
        self, kernel: Kernel, source: str, corpus: FakeCorpus, vendor: FakeVendor, wire: Any
    ) -> None:
        """An incremental run whose pages all come from a feed that reports deletions (delta,
        history, sync token) takes the deletion from the feed and lists no ids after it; a
        connector without such a feed reconciles with ``list_ids``. Either way the deleted
        item leaves the index."""
        await kernel.sync.run(source, user_id=USER)
        gone = corpus.live()[1]
        corpus.remove(gone.id)
        before = len(vendor.data_requests)
        _, result = await kernel.sync.run(source, user_id=USER)
        sent = len(vendor.data_requests) - before
        if os.environ.get("NYLA_REPORT_REQUESTS"):  # bench/sync_requests.py reads this
            print(f"\nREQUESTS {type(self).__name__} {sent} {result.sweep}")
        assert wire.item_id(gone) not in await self._indexed(kernel), "a deleted item stayed"
        assert result.items_deleted == 1, result
        if result.sweep.startswith("not needed"):
            assert result.sweep == "not needed: the source's feed reported its deletions"

    async def test_truncated_listing_deletes_nothing(
        self, kernel: Kernel, source: str, corpus: FakeCorpus
    ) -> None:
        await kernel.sync.run(source, user_id=USER)
        before = await self._indexed(kernel)
        corpus.truncate_after = 2
        corpus.expire_cursors()
        _, result = await kernel.sync.run(source, user_id=USER)
        assert await self._indexed(kernel) == before, "a truncated listing deleted knowledge"
        assert result.sweep.startswith(("refused", "not run", "not needed")), result.sweep

    async def test_a_listing_that_fails_part_way_deletes_nothing_it_could_not_see(
        self, kernel: Kernel, source: str, corpus: FakeCorpus, wire: ConnectorWire,
        vendor: FakeVendor,
    ) -> None:  # fmt: skip
        sealed = [
            wire.add_unlistable(corpus, f"sealed-{k}.txt", f"Sealed {k} zebras.") for k in "ab"
        ]
        await kernel.sync.run(source, user_id=USER)
        sealed_ids = {wire.item_id(d) for d in sealed}
        assert sealed_ids <= set(await self._indexed(kernel)), "the sealed items were not indexed"
        gone = next(d for d in corpus.live() if d not in sealed)
        corpus.remove(gone.id)
        vendor.deny_listing(sealed)  # their folder (or the page showing them) answers 403
        corpus.expire_cursors()
        try:
            _, result = await kernel.sync.run(source, user_id=USER)
        except ConnectorError:  # a single-stream listing fails as a whole: nothing swept
            assert not wire.lists_by_folder, "one unreadable folder ended the whole sync"
            result = None
        assert vendor.denials, "no answer showed the sealed items: the scenario tested nothing"
        indexed = set(await self._indexed(kernel))
        assert sealed_ids <= indexed, "a listing that failed part-way deleted what it missed"
        if result is not None:  # said: unlisted folders, no sweep, or the items as failed
            said = result.unlisted or result.sweep.startswith(("not run", "refused"))
            said = said or all(any(i in e for e in result.errors) for i in sealed_ids)
            assert said, f"a listing that failed part-way looked complete: {result}"
        if wire.lists_by_folder:
            assert result is not None and result.unlisted, f"nothing reported unlisted: {result}"
            assert result.sweep.startswith("incomplete"), result.sweep
            assert any(result.unlisted[0].path in e for e in result.errors), result.errors
            assert wire.item_id(gone) not in indexed, "a deletion elsewhere was not swept"
        vendor.allow_listing()
        _, healed = await kernel.sync.run(source, user_id=USER)
        indexed = set(await self._indexed(kernel))
        assert not healed.unlisted and sealed_ids <= indexed, healed
        assert wire.item_id(gone) not in indexed, "the deletion never reached the index"

    async def test_cancel_mid_sync_resumes_without_duplicates(
        self, kernel: Kernel, source: str, corpus: FakeCorpus, wire: ConnectorWire
    ) -> None:
        class CancelAfterFirstPage(JobHandle):
            async def progress(
                self, done: int, total: int | None = None, message: str = ""
            ) -> None:
                await super().progress(done, total, message)
                await self.store.cancel(self.id)

        ticks = iter(range(0, 10_000, 10))

        async def job(handle: JobHandle) -> Any:
            cancelling = CancelAfterFirstPage(handle.store, handle.id, clock=lambda: next(ticks))
            return await kernel.sync.runner.sync(source, cancelling)

        _, first = await kernel.jobs.run("sync", job, user_id=USER, data_source_id=source)
        partial = len(await self._indexed(kernel))
        assert first.cancelled and 0 < partial < corpus_size(corpus), (
            f"cancel after the first page: cancelled={first.cancelled}, {partial} of "
            f"{corpus_size(corpus)} items indexed"
        )
        _, second = await kernel.sync.run(source, user_id=USER)
        indexed = await self._indexed(kernel)
        assert set(indexed) == {wire.item_id(d) for d in corpus.live()}, (
            "items lost after the resume"
        )
        assert await self._chunks(kernel) == sum(indexed.values()), "duplicate chunks"
        assert second.items_indexed + first.items_indexed == corpus_size(corpus), (
            "the resumed sync indexed items twice or skipped some"
        )

    async def test_limits_stop_the_sync_and_say_why(
        self, kernel: Kernel, source: str, corpus: FakeCorpus, wire: ConnectorWire
    ) -> None:
        big = corpus.live()[0]
        big.content = b"large " * 400
        _, result = await kernel.sync.run(
            source, user_id=USER, limits={"max_items": 3, "max_file_size": 1000}
        )
        assert result.stopped_at_limit, "max_items did not stop the sync"
        assert (
            wire.item_id(big) in result.skipped
            and "max_file_size" in result.skipped[wire.item_id(big)]
        ), f"the large item is not skipped for max_file_size: {result.skipped}"
        indexed = len(await self._indexed(kernel))
        # three counted, the large one skipped
        assert indexed == 2, f"{indexed} items indexed under max_items=3 with one too large"
        [row] = [r for r in await kernel.sync.status(user_id=USER) if r["dataSourceId"] == source]
        assert row["stoppedAtLimit"] == "max_items", f"status says {row['stoppedAtLimit']!r}"

    async def test_consent_off_mid_sync_purges_and_stops(self, kernel: Kernel, source: str) -> None:
        connection_id = source.removeprefix("ds-")

        class WithdrawAfterFirstPage(JobHandle):
            async def progress(
                self, done: int, total: int | None = None, message: str = ""
            ) -> None:
                await super().progress(done, total, message)
                governance = kernel.knowledge.governance
                await governance.set_knowledge_consent(connection_id, False, actor=USER)

        async def job(handle: JobHandle) -> Any:
            return await kernel.sync.runner.sync(
                source, WithdrawAfterFirstPage(handle.store, handle.id)
            )

        _, result = await kernel.jobs.run(
            "sync", job, user_id=USER, data_source_id=source, connection_id=connection_id
        )
        assert result.cancelled, "withdrawing consent did not stop the sync"
        assert await self._indexed(kernel) == {}, (
            "content stayed (or was written) after consent off"
        )
        assert await self._chunks(kernel) == 0, "chunks stayed after consent off"


def corpus_size(corpus: FakeCorpus) -> int:
    """Number of live documents."""
    return len(corpus.live())


def _scheme(adapter: Any) -> str:
    policy = getattr(adapter, "http_policy", None)
    return getattr(policy, "auth_scheme", "Bearer")
