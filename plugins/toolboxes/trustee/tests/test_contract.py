"""The trustee toolbox passes the kernel's ToolboxContract."""

from __future__ import annotations

import pytest

import nyla_toolbox_trustee
from nyla.testing import ToolboxContract


class TestTrusteeToolboxContract(ToolboxContract):
    @pytest.fixture
    def plugin(self):
        return nyla_toolbox_trustee
