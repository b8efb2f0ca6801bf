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
