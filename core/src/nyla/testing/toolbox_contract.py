"""Contract suite for toolbox plugins."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from typing import Any

from nyla.checks import check_tool
from nyla.testing.contract_base import PluginContract, owned
from nyla.testing.schema_samples import CannotSample, sample_arguments

_TOOL_NAME = re.compile(r"^[a-z][A-Za-z0-9]*(_[A-Za-z0-9]+)?$")


def own_tools(plugin: Any) -> list[Any]:
    """The tools of the toolboxes ``plugin`` contributes (not the built-ins beside it)."""
    return [tool for toolbox in owned(plugin, "toolboxes").values() for tool in toolbox.tools]


def _dispatch_all(tools: list[Any], calls: list[tuple[Any, str]]) -> list[tuple[Any, str, Any]]:
    """``(tool, raw arguments, result)`` for each call, dispatched by the kernel's registry
    with an empty tool context (no run, no services)."""
    from nyla.agent.registry import ToolRegistry
    from nyla.models.ai import ToolCall
    from nyla.models.tools import ToolContext

    registry = ToolRegistry(tools, default_timeout_s=10)

    async def run() -> list[tuple[Any, str, Any]]:
        out = []
        for tool, raw in calls:
            done = await registry.dispatch(
                ToolCall(id="probe", name=tool.name, arguments=raw), ToolContext()
            )
            out.append((tool, raw, done.result))
        return out

    return asyncio.run(run())


class ToolboxContract(PluginContract):
    """Contract for toolbox plugins: unique, valid tools with object JSON schemas, names the
    model can call and that do not clash with the kernel's own, arguments validated before
    any handler runs (bad input from a model comes back as a failed result, never as an
    exception), and every tool answers a call with arguments generated from its schema."""

    def test_tools_are_valid(self, plugin: Any) -> None:
        toolboxes = owned(plugin, "toolboxes")
        assert toolboxes, "the plugin registers no toolbox (nyla_toolboxes), or it clashed"
        for toolbox in toolboxes.values():
            assert toolbox.tools, f"toolbox {toolbox.id} has no tools"
            names = [t.name for t in toolbox.tools]
            assert len(names) == len(set(names)), f"duplicate tool names in {toolbox.id}"
            for tool in toolbox.tools:
                problems = check_tool(tool)
                assert problems == [], f"{toolbox.id}.{tool.name}: " + "; ".join(problems)
                assert inspect.iscoroutinefunction(tool.handler), f"{tool.name} is not async"

    def test_tool_names_and_schemas_suit_function_calling(self, plugin: Any) -> None:
        tools = own_tools(plugin)
        assert tools, "the plugin contributes no tools"
        for tool in tools:
            assert _TOOL_NAME.match(tool.name), f"{tool.name}: use camelCase (or method_action)"
            assert tool.parameters.get("type") == "object", f"{tool.name}: schema not an object"
            assert tool.description.strip(), f"{tool.name} has no description"
            assert isinstance(tool.read_only, bool), f"{tool.name}: read_only is not a bool"

    def test_malformed_arguments_never_raise(self, plugin: Any) -> None:
        tools = own_tools(plugin)
        assert tools, "the plugin contributes no tools"
        raws = ('{"broken": ', "[1, 2]", '{"__unknownField__": 1}')
        for tool, raw, result in _dispatch_all(tools, [(t, r) for t in tools for r in raws]):
            if (
                raw != '{"__unknownField__": 1}'
                or tool.parameters.get("additionalProperties") is False
            ):
                assert not result.success, f"{tool.name} accepted {raw!r}"
                assert result.error_details is not None, f"{tool.name}: {raw!r} failed untyped"

    def test_call_without_arguments(self, plugin: Any) -> None:
        """An empty argument string is ``{}``: tools with required fields name the first
        missing one; the others run (and answer with a result, never an exception)."""
        tools = own_tools(plugin)
        assert tools, "the plugin contributes no tools"
        for tool, _, result in _dispatch_all(tools, [(t, "") for t in tools]):
            required = tool.parameters.get("required") or []
            if required:
                assert not result.success, f"{tool.name} ran without its required {required}"
                code = result.error_details.code if result.error_details else None
                assert code == "MISSING_FIELD", f"{tool.name} without arguments: {result.error}"
            else:
                _assert_validates(tool, {})
                _assert_answered(tool, "", result)

    def test_schema_generated_valid_calls(self, plugin: Any) -> None:
        """Arguments generated from each tool's JSON schema (required fields only, then every
        field) pass the kernel's validation and reach the handler, which answers with a
        result; the generated object is checked against the schema itself first."""
        from jsonschema import Draft202012Validator

        tools = own_tools(plugin)
        assert tools, "the plugin contributes no tools"
        calls = []
        for tool in tools:
            for full in (False, True):
                try:
                    arguments = sample_arguments(tool.parameters, full=full)
                except CannotSample:
                    continue
                errors = [
                    e.message for e in Draft202012Validator(tool.parameters).iter_errors(arguments)
                ]
                assert not errors, f"{tool.name}: generated {arguments} is invalid: {errors}"
                _assert_validates(tool, arguments)
                if (tool, json.dumps(arguments)) not in calls:
                    calls.append((tool, json.dumps(arguments)))
        assert calls, "no tool schema could be sampled"
        for tool, raw, result in _dispatch_all(tools, calls):
            _assert_answered(tool, raw, result)


def _assert_validates(tool: Any, arguments: dict[str, Any]) -> None:
    """The kernel's validator (``args_model``) accepts what the JSON schema the model sees
    allows. Rules a JSON schema cannot state (a model-level validator relating two fields)
    may still refuse, as a typed error; a field the schema and the validator disagree on
    fails."""
    from pydantic import ValidationError

    try:
        tool.args_model.model_validate(arguments)
    except ValidationError as exc:
        fields = [e for e in exc.errors(include_url=False) if e.get("loc")]
        assert not fields, (
            f"{tool.name}: the kernel rejected schema-valid arguments {arguments}: "
            + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in fields)
        )


def _assert_answered(tool: Any, raw: str, result: Any) -> None:
    """The handler answered (success or a typed failure with a message) within the
    deadline, with no services in its context."""
    code = result.error_details.code if result.error_details else None
    assert code != "TIMEOUT", f"{tool.name} hung on {raw} with no services"
    if not result.success:
        assert result.error_details is not None, f"{tool.name} failed on {raw} untyped"
    if not result.success:
        assert result.error, f"{tool.name} failed on {raw} without a message"
