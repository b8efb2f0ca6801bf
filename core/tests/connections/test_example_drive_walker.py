"""The walker contract, run on the example Graph-shaped drive."""

from __future__ import annotations

import pytest

from nyla.testing.fake_vendor import ConnectorWire
from nyla.testing.walker_contract import USER, WalkerContract

from .example_drive import ExampleDrivePlugin, ExampleDriveWire


class TestExampleDriveWalker(WalkerContract):
    @pytest.fixture
    def plugin(self) -> ExampleDrivePlugin:
        return ExampleDrivePlugin()

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return ExampleDriveWire()

    async def test_an_item_id_that_cannot_be_stored_is_left_out_and_said(
        self, kernel, source, corpus
    ) -> None:
        """A service (or a connector's bug) handing out an id with a NUL byte: that item is
        reported and left out, a title with one is cleaned, the rest of the sync goes on."""
        bad = corpus.add("bad.txt", "Meeting note about nullbytes.")
        corpus.docs[bad.id + "\x00"] = corpus.docs.pop(bad.id)
        bad.id += "\x00"
        corpus.log[-1] = (corpus.log[-1][0], bad.id)
        odd = corpus.add("odd\x00name.txt", "Meeting note about oddities.")
        _, result = await kernel.sync.run(source, user_id=USER)
        assert result.items_failed == 1 and "cannot be stored" in result.errors[0], result
        indexed = await self._indexed(kernel)
        assert odd.id in indexed and len(indexed) == len(corpus.live()) - 1
        _, again = await kernel.sync.run(source, user_id=USER)
        assert again.items_indexed == 0 and again.sweep.startswith("complete")  # state kept

    async def test_each_per_item_timeout_skips_that_item_and_says_so(
        self, kernel, source, corpus, monkeypatch
    ) -> None:
        """A download, an extraction and an embedding that each hang on one item: those three
        items fail alone, named with their phase in the result; the rest is indexed."""
        import asyncio

        from nyla.jobs.runtime import ITEM_TIMEOUTS
        from nyla.knowledge.indexing import Indexer
        from nyla.testing.scripted import ScriptedProvider

        from .example_drive import ExampleDrive

        for phase in ("download", "extract", "embed"):
            monkeypatch.setitem(ITEM_TIMEOUTS, phase, 0.3)
        stuck = {
            "download": corpus.add("stuck-download.txt", "Meeting note about downloads."),
            "extract": corpus.add("stuck-extract.txt", "Meeting note about extraction."),
            "embed": corpus.add("stuck-embed.txt", "Meeting note about zzhangingembed."),
        }
        download, document, embed = (
            ExampleDrive.download,
            Indexer._document,
            ScriptedProvider.embed,
        )

        async def hanging_download(adapter, ctx, item_id, max_bytes=None):
            if item_id.endswith(stuck["download"].id):
                await asyncio.sleep(30)
            return await download(adapter, ctx, item_id, max_bytes)

        async def hanging_document(indexer, file, content, context):
            if file.name == "stuck-extract.txt":
                await asyncio.sleep(30)
            return await document(indexer, file, content, context)

        async def hanging_embed(provider, model, texts):
            if any("zzhangingembed" in t for t in texts):
                await asyncio.sleep(30)
            return await embed(provider, model, texts)

        monkeypatch.setattr(ExampleDrive, "download", hanging_download)
        monkeypatch.setattr(Indexer, "_document", hanging_document)
        monkeypatch.setattr(ScriptedProvider, "embed", hanging_embed)
        _, result = await kernel.sync.run(source, user_id=USER)
        assert result.items_failed == 3, result
        for phase, doc in stuck.items():
            [error] = [e for e in result.errors if doc.name in e or doc.id in e]
            assert f"{phase} of" in error and "took longer than" in error, error
        indexed = await self._indexed(kernel)
        assert len(indexed) == len(corpus.live()) - 3
