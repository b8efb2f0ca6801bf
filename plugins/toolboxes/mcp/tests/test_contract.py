"""The MCP toolbox plugin passes the kernel's ToolboxContract over a configured server."""

from __future__ import annotations

import pytest

from nyla.sdk import RunContext, Toolbox, hookimpl
from nyla.testing import ToolboxContract
from nyla_toolbox_mcp import mcp_toolboxes
from nyla_toolbox_mcp.cli import add_server
from nyla_toolbox_mcp.servers import ServerStore

from .conftest import in_loop


class McpAsARunSeesIt:
    """The plugin with the toolboxes a run of ``ada`` gets (the plugin registers them per
    run: the contract checks those)."""

    def __init__(self, toolboxes: list[Toolbox]) -> None:
        self.toolboxes = toolboxes

    @hookimpl
    def nyla_toolboxes(self) -> list[Toolbox]:
        return self.toolboxes


class TestMcpToolboxContract(ToolboxContract):
    @pytest.fixture
    def plugin(self, store, demo):
        async def configured(store: ServerStore) -> list[Toolbox]:
            await add_server(store, "ada", demo)
            return await mcp_toolboxes(store, RunContext(user_id="ada"))

        return McpAsARunSeesIt(in_loop(configured))
