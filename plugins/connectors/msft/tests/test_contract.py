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

#: ids as long as Graph's real ones (the samples in tests/data are shortened ones from the
#: docs): the walker contract then indexes items whose ids are as long as in a real tenant
REAL_MESSAGE_ID = (
    "AAMkAGVmMDEzMTM4LTZmYWUtNDdkNC1hMDZiLTU1OGY5OTZhYmY4OABGAAAAAAAiQ8W967B7TKBjgx9rVEURBwAi"
    "IsqMbYjsT5e-T7KzowPTAAAAAAEMAAAiIsqMbYjsT5e-T7KzowPTAAAYbvZDAAA="
)
REAL_DRIVE_ITEM_ID = "01BYE5RZ6QN3ZWBTUFOFD3GSPGOHDJD36K"


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
    raw_prefix = REAL_MESSAGE_ID[:-5]  # Graph's message ids are this long (152 characters)

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return MailWire()


class TestSharePointLibraryWalker(_GraphWalker):
    prefix = f"file:{DRIVE}:"
    raw_prefix = REAL_DRIVE_ITEM_ID[:-5]  # and drive item ids 34

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return DriveWire()
