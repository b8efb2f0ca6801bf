"""The connector and walker contracts over ClickUp faked at the wire."""

from __future__ import annotations

import pytest

import nyla_connector_clickup
from nyla.testing.connector_contract import ConnectorContract
from nyla.testing.fake_vendor import ConnectorWire
from nyla.testing.walker_contract import WalkerContract

from .clickup_wire import ClickUpWire


class TestClickUpContract(ConnectorContract):
    @pytest.fixture
    def plugin(self):
        return nyla_connector_clickup

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return ClickUpWire()


class TestClickUpWalker(WalkerContract):
    @pytest.fixture
    def plugin(self):
        return nyla_connector_clickup

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return ClickUpWire()
