"""The connector contract over Graph faked at the wire: once on an Outlook folder (KQL
search, MIME download, messages/delta with 400 syncStateNotFound), once on a SharePoint
library folder (folder search, download, root/delta with 410 resyncRequired)."""

from __future__ import annotations

import pytest

import nyla_connector_msft
from nyla.testing.connector_contract import ConnectorContract
from nyla.testing.fake_vendor import ConnectorWire, FakeCorpus
from nyla.testing.walker_contract import WalkerContract

from .graph_wire import DRIVE, DriveWire, GraphCorpus, MailWire


class _GraphContract(ConnectorContract):
    prefix = ""
    raw_prefix = ""

    @pytest.fixture
    def plugin(self):
        return nyla_connector_msft

    @pytest.fixture
    def corpus(self, wire: ConnectorWire) -> FakeCorpus:
        corpus = GraphCorpus(self.prefix, self.raw_prefix, page_size=3)
        for i in range(self.corpus_size):
            corpus.add(f"report-{i:02d}.txt", f"Quarterly report {i}: revenue grew.", wire.scope)
        return corpus


class TestOutlookMailContract(_GraphContract):
    prefix = "mail:"
    raw_prefix = "AAMkAGI2TG93AAA"

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return MailWire()


class TestSharePointLibraryContract(_GraphContract):
    prefix = f"file:{DRIVE}:"
    raw_prefix = "01BYE5RZ"

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return DriveWire()


class _GraphWalker(WalkerContract):
    prefix = ""
    raw_prefix = ""

    @pytest.fixture
    def plugin(self):
        return nyla_connector_msft

    @pytest.fixture
    def corpus(self, wire: ConnectorWire) -> FakeCorpus:
        corpus = GraphCorpus(self.prefix, self.raw_prefix, page_size=3)
        for i in range(self.corpus_size):
            corpus.add(f"note-{i:02d}.txt", f"Meeting note {i} about topic{i} budget.", wire.scope)
        return corpus


class TestOutlookMailWalker(_GraphWalker):
    prefix = "mail:"
    raw_prefix = "AAMkAGI2TG93AAA"

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return MailWire()


class TestSharePointLibraryWalker(_GraphWalker):
    prefix = f"file:{DRIVE}:"
    raw_prefix = "01BYE5RZ"

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return DriveWire()
