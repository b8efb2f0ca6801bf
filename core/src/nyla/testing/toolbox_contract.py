"""Contract suite for toolbox plugins."""

from __future__ import annotations

import inspect
from typing import Any

from nyla.checks import check_tool
from nyla.testing.contract_base import PluginContract, _host_for


class ToolboxContract(PluginContract):
    """Contract for toolbox plugins: unique, valid tools with object JSON schemas."""

    def test_tools_are_valid(self, plugin: Any) -> None:
        host = _host_for(plugin)
        assert host.toolboxes, "no toolbox registered"
        for toolbox in host.toolboxes.values():
            assert toolbox.tools, f"toolbox {toolbox.id} has no tools"
            names = [t.name for t in toolbox.tools]
            assert len(names) == len(set(names)), f"duplicate tool names in {toolbox.id}"
            for tool in toolbox.tools:
                assert check_tool(tool) == []
                assert inspect.iscoroutinefunction(tool.handler), f"{tool.name} is not async"
