"""The walker contract, run on the example Graph-shaped drive."""

from __future__ import annotations

import pytest

from nyla.testing.fake_vendor import ConnectorWire
from nyla.testing.walker_contract import WalkerContract

from .example_drive import ExampleDrivePlugin, ExampleDriveWire


class TestExampleDriveWalker(WalkerContract):
    @pytest.fixture
    def plugin(self) -> ExampleDrivePlugin:
        return ExampleDrivePlugin()

    @pytest.fixture
    def wire(self) -> ConnectorWire:
        return ExampleDriveWire()
