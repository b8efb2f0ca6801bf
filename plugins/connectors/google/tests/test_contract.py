"""The connector and walker contracts over Google faked at the wire: once on a Gmail label
(``q=`` search, raw MIME download, history.list with 404 for an expired history id), once on
a shared-drive folder (``fullText contains``, ``alt=media``, changes.list with the start token
taken before the sweep; 400 for a stale page token)."""

from __future__ import annotations

import pytest

import nyla_connector_google
from nyla.testing.connector_contract import ConnectorContract
from nyla.testing.fake_vendor import ConnectorWire, FakeCorpus
from nyla.testing.walker_contract import WalkerContract

from .drive_wire import DriveWire
from .google_wire import GmailWire, GoogleCorpus


class _Contract(ConnectorContract):
    prefix = ""
    raw_prefix = ""

    @pytest.fixture
    def plugin(self):
        return nyla_connector_google

    @pytest.fixture
    def corpus(self, wire: ConnectorWire) -> FakeCorpus:
        corpus = GoogleCorpus(self.prefix, self.raw_prefix, page_size=3)
        for i in range(self.corpus_size):
            corpus.add(f"report-{i:02d}.txt", f"Quarterly report {i}: revenue grew.", wire.scope)
        return corpus


class TestGmailContract(_Contract):
    prefix = "mail:"
    raw_prefix = "18c2f1a9b3e"

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return GmailWire()


class TestDriveSharedDriveContract(_Contract):
    prefix = "file:"
    raw_prefix = "1A2b3C4d5E6f"

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return DriveWire()


class _Walker(WalkerContract):
    prefix = ""
    raw_prefix = ""

    @pytest.fixture
    def plugin(self):
        return nyla_connector_google

    @pytest.fixture
    def corpus(self, wire: ConnectorWire) -> FakeCorpus:
        corpus = GoogleCorpus(self.prefix, self.raw_prefix, page_size=3)
        for i in range(self.corpus_size):
            corpus.add(f"note-{i:02d}.txt", f"Meeting note {i} about topic{i} budget.", wire.scope)
        return corpus


class TestGmailWalker(_Walker):
    prefix = "mail:"
    raw_prefix = "18c2f1a9b3e"

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return GmailWire()


class TestDriveWalker(_Walker):
    prefix = "file:"
    raw_prefix = "1A2b3C4d5E6f"

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return DriveWire()
