"""The connector contract, run on the example Graph-shaped drive."""

from __future__ import annotations

import pytest

from nyla.testing.connector_contract import ConnectorContract
from nyla.testing.fake_vendor import ConnectorWire

from .example_drive import ExampleDrivePlugin, ExampleDriveWire


class TestExampleDrive(ConnectorContract):
    @pytest.fixture
    def plugin(self) -> ExampleDrivePlugin:
        return ExampleDrivePlugin()

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return ExampleDriveWire()
