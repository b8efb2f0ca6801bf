"""The SharePoint toolbox passes the kernel's ToolboxContract."""

from __future__ import annotations

import pytest

import nyla_toolbox_sharepoint
from nyla.testing import ToolboxContract


class TestSharePointToolboxContract(ToolboxContract):
    @pytest.fixture
    def plugin(self):
        return nyla_toolbox_sharepoint
