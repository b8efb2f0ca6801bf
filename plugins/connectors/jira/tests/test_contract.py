"""The connector and walker contracts over Jira Cloud faked at the wire."""

from __future__ import annotations

import pytest

import nyla_connector_jira
from nyla.testing.connector_contract import ConnectorContract
from nyla.testing.fake_vendor import ConnectorWire
from nyla.testing.walker_contract import WalkerContract

from .jira_wire import JiraWire


class TestJiraContract(ConnectorContract):
    @pytest.fixture
    def plugin(self):
        return nyla_connector_jira

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return JiraWire()


class TestJiraWalker(WalkerContract):
    @pytest.fixture
    def plugin(self):
        return nyla_connector_jira

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return JiraWire()
