"""The MCP toolbox plugin passes the kernel's ToolboxContract over a configured server."""

from __future__ import annotations

import anyio
import pytest

import nyla_toolbox_mcp
from nyla.testing import ToolboxContract
from nyla_toolbox_mcp.cli import add_server


class TestMcpToolboxContract(ToolboxContract):
    @pytest.fixture
    def plugin(self, store, demo):
        anyio.run(add_server, store, "ada", demo)
        return nyla_toolbox_mcp
