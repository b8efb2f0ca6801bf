"""The connector contract on kDrive (REST: cursor listings, listing/continue, search,
download, 400 invalid_cursor) and on an Infomaniak calendar (CalDAV: sync-collection with
507 paging and 404 tombstones, 403 valid-sync-token, calendar-query)."""

from __future__ import annotations

import pytest

import nyla_connector_infomaniak
from nyla.testing.connector_contract import ConnectorContract
from nyla.testing.fake_vendor import ConnectorWire, FakeCorpus
from nyla.testing.walker_contract import WalkerContract

from .wires import CalDavWire, KDriveWire, caldav_corpus, kdrive_corpus


class _Contract(ConnectorContract):
    make_corpus = staticmethod(kdrive_corpus)

    @pytest.fixture
    def plugin(self):
        return nyla_connector_infomaniak

    @pytest.fixture
    def corpus(self, wire: ConnectorWire) -> FakeCorpus:
        corpus = self.make_corpus()
        for i in range(self.corpus_size):
            corpus.add(f"report-{i:02d}.txt", f"Quarterly report {i}: revenue grew.", wire.scope)
        return corpus


class TestKDriveContract(_Contract):
    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return KDriveWire()


class TestCalDavContract(_Contract):
    make_corpus = staticmethod(caldav_corpus)

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return CalDavWire()


class _Walker(WalkerContract):
    make_corpus = staticmethod(kdrive_corpus)

    @pytest.fixture
    def plugin(self):
        return nyla_connector_infomaniak

    @pytest.fixture
    def corpus(self, wire: ConnectorWire) -> FakeCorpus:
        corpus = self.make_corpus()
        for i in range(self.corpus_size):
            corpus.add(f"note-{i:02d}.txt", f"Meeting note {i} about topic{i} budget.", wire.scope)
        return corpus


class TestKDriveWalker(_Walker):
    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return KDriveWire()


class TestCalDavWalker(_Walker):
    make_corpus = staticmethod(caldav_corpus)

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return CalDavWire()
