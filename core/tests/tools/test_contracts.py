"""The kernel's default toolboxes pass the toolbox contract every plugin passes."""

from __future__ import annotations

import pytest

import nyla.tools.ai
import nyla.tools.core
from nyla.testing.toolbox_contract import ToolboxContract


class TestCoreToolboxContract(ToolboxContract):
    @pytest.fixture
    def plugin(self):
        return nyla.tools.core


class TestAiToolboxContract(ToolboxContract):
    @pytest.fixture
    def plugin(self):
        return nyla.tools.ai
