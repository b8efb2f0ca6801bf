"""The ClickUp toolbox passes the kernel's ToolboxContract."""

from __future__ import annotations

import pytest

import nyla_toolbox_clickup
from nyla.testing import ToolboxContract


class TestClickUpToolboxContract(ToolboxContract):
    @pytest.fixture
    def plugin(self):
        return nyla_toolbox_clickup
