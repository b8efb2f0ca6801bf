"""The connector and walker contracts on the WebDAV adapter over an RFC 4918 wire."""

from __future__ import annotations

import pytest
from localfs_webdav_wire import WebDavWire

import nyla_connector_localfs.plugin as plugin_module
from nyla.testing.connector_contract import ConnectorContract
from nyla.testing.fake_vendor import ConnectorWire
from nyla.testing.walker_contract import WalkerContract


class TestWebDavConnector(ConnectorContract):
    @pytest.fixture
    def plugin(self):
        return plugin_module

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return WebDavWire()


class TestWebDavWalker(WalkerContract):
    @pytest.fixture
    def plugin(self):
        return plugin_module

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return WebDavWire()
