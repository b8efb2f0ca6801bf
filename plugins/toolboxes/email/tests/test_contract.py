"""The e-mail toolbox passes the kernel's ToolboxContract."""

from __future__ import annotations

import pytest

import nyla_toolbox_email
from nyla.testing import ToolboxContract


class TestEmailToolboxContract(ToolboxContract):
    @pytest.fixture
    def plugin(self):
        return nyla_toolbox_email
