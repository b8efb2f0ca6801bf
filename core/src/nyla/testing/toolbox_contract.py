"""Contract suite for toolbox plugins."""

from __future__ import annotations

import asyncio
import inspect
import re
from typing import Any

from nyla.checks import check_tool
from nyla.testing.contract_base import PluginContract, _host_for

_TOOL_NAME = re.compile(r"^[a-z][A-Za-z0-9]*(_[A-Za-z0-9]+)?$")


class ToolboxContract(PluginContract):
    """Contract for toolbox plugins: unique, valid tools with object JSON schemas, names the
    model can call, and arguments validated before any handler runs (bad input from a model
    comes back as a failed result, never as an exception)."""

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

    def test_tool_names_and_schemas_suit_function_calling(self, plugin: Any) -> None:
        host = _host_for(plugin)
        for tool in host.tools():
            assert _TOOL_NAME.match(tool.name), f"{tool.name}: use camelCase (or method_action)"
            assert tool.parameters.get("type") == "object", f"{tool.name}: schema not an object"
            assert tool.description.strip(), f"{tool.name} has no description"
            assert isinstance(tool.read_only, bool)

    def test_malformed_arguments_never_raise(self, plugin: Any) -> None:
        from nyla.agent.registry import ToolRegistry
        from nyla.models.ai import ToolCall
        from nyla.models.tools import ToolContext

        host = _host_for(plugin)
        registry = ToolRegistry(host.tools(), default_timeout_s=5)

        async def probe() -> None:
            for tool in host.tools():
                for raw in ('{"broken": ', "[1, 2]", '{"__unknownField__": 1}'):
                    done = await registry.dispatch(
                        ToolCall(id="probe", name=tool.name, arguments=raw), ToolContext()
                    )
                    if (
                        raw != '{"__unknownField__": 1}'
                        or tool.parameters.get("additionalProperties") is False
                    ):
                        assert not done.result.success, f"{tool.name} accepted {raw!r}"
                        assert done.result.error_details is not None

        asyncio.run(probe())
