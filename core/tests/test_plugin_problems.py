"""Problems a plugin host reports by plugin name: a hook that forgets ``return``, a tool whose
schema a model API would reject, an async contribution hook, a provider answering the wrong
type, unknown names in the selection variables; strict mode turns warnings into errors."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import nyla
from nyla.errors import PluginError, ProviderError
from nyla.models.ai import AiCallRequest, Message, Role
from nyla.models.tools import Tool, Toolbox, ToolContext
from nyla.plugins import PluginHost
from nyla.testing import ScriptedProvider, invoke_cli
from nyla.testing.scripted import ScriptedPlugin


class NoArgs(BaseModel):
    pass


async def _noop(args: NoArgs, ctx: ToolContext) -> str:
    return "ok"


def tool(name: str, parameters: dict[str, Any] | None = None) -> Tool:
    made = Tool.from_model(name, "Does nothing.", NoArgs, _noop)
    if parameters is not None:
        made = made.model_copy(update={"parameters": parameters})
    return made


class ForgetsReturn:
    @nyla.hookimpl
    def nyla_toolboxes(self) -> list[Toolbox]:
        [Toolbox(id="lost", tools=[tool("lostTool")])]


class BadSchema:
    @nyla.hookimpl
    def nyla_toolboxes(self) -> list[Toolbox]:
        broken = tool("brokenTool", {"type": "object", "properties": {"n": {"type": "integr"}}})
        return [Toolbox(id="mixed", tools=[tool("goodTool"), broken])]


class AsyncContribution:
    @nyla.hookimpl
    async def nyla_toolboxes(self) -> list[Toolbox]:
        return []


def host(*plugins: Any) -> PluginHost:
    return PluginHost.from_plugins(plugins, names=[type(p).__name__ for p in plugins])


def test_a_hook_returning_none_is_a_warning_naming_the_plugin() -> None:
    built = host(ForgetsReturn())
    record = built.records["ForgetsReturn"]
    assert record.status == "ok"
    assert record.warnings == [
        "nyla_toolboxes() returned None, expected a list (a missing return?)"
    ]
    with pytest.raises(PluginError, match="ForgetsReturn: nyla_toolboxes\\(\\) returned None"):
        built.raise_on_failures()


def test_a_tool_with_an_invalid_schema_is_left_out_with_a_warning() -> None:
    built = host(BadSchema())
    assert [t.name for t in built.toolboxes["mixed"].tools] == ["goodTool"]
    (warning,) = built.records["BadSchema"].warnings
    assert "brokenTool" in warning and "invalid JSON schema" in warning
    assert "brokenTool" not in built.records["BadSchema"].contributes["tools"]
    with pytest.raises(PluginError, match="BadSchema: toolbox mixed: left out"):
        built.raise_on_failures()


def test_an_async_contribution_hook_fails_the_plugin() -> None:
    built = host(AsyncContribution())
    record = built.records["AsyncContribution"]
    assert record.status == "failed"
    assert "is async" in (record.error or "")


def test_contribution_hooks_go_through_pluggy_so_a_plugins_wrapper_applies() -> None:
    class Wrapped:
        @nyla.hookimpl
        def nyla_toolboxes(self) -> list[Toolbox]:
            return [Toolbox(id="raw", tools=[tool("rawTool")])]

        @nyla.hookimpl(wrapper=True, specname="nyla_toolboxes")
        def nyla_toolboxes_wrapper(self) -> Any:
            answers = yield
            return [[box.model_copy(update={"label": "wrapped"}) for box in a] for a in answers]

    built = host(Wrapped())
    assert built.records["Wrapped"].status == "ok", built.records["Wrapped"].error
    assert built.toolboxes["raw"].label == "wrapped"


def test_unknown_names_in_the_selection_variables_are_an_error_naming_the_known(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NYLA_PLUGINS", "openai,no-such-plugin")
    with pytest.raises(PluginError) as caught:
        PluginHost.discover(strict=False)
    message = str(caught.value)
    assert "NYLA_PLUGINS names unknown plugin(s): no-such-plugin" in message
    assert "openai" in message.split("known:")[1]
    monkeypatch.delenv("NYLA_PLUGINS")
    monkeypatch.setenv("NYLA_DISABLE_PLUGINS", "opnai")
    with pytest.raises(PluginError, match="NYLA_DISABLE_PLUGINS names unknown plugin"):
        PluginHost.discover(strict=False)


def test_a_failed_plugin_is_named_when_its_kind_is_asked_for() -> None:
    class Raises:
        @nyla.hookimpl
        def nyla_toolboxes(self) -> list[Toolbox]:
            raise RuntimeError("no config")

    built = host(Raises())
    hint = built.failure_hint("toolboxes")
    assert "Raises" in hint and "no config" in hint
    assert host(ForgetsReturn()).failure_hint("toolboxes") == ""


async def test_a_provider_answering_the_wrong_type_fails_naming_the_plugin(
    make_kernel: Any,
) -> None:
    class DictProvider(ScriptedProvider):
        async def chat(self, request: Any) -> Any:
            return {"content": "a dict"}

    kernel = make_kernel(DictProvider(lambda r, i: "x"), builtins=False)
    request = AiCallRequest(operation="agent", messages=[Message(role=Role.USER, content="hi")])
    with pytest.raises(ProviderError) as caught:
        await kernel.ai.call(request)
    message = str(caught.value)
    assert "answered" in message and "dict" in message and "expected ChatResponse" in message
    assert "plugin" in message and kernel.plugins.owner_of("providers", "scripted") in message


def test_strict_mode_holds_for_inspector_commands_beyond_plugins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NYLA_STRICT_PLUGINS", "1")
    monkeypatch.setattr(
        "nyla.plugins.BUILTIN_PLUGINS",
        (("nyla.broken_builtin", "nyla.no_such_module_for_this_test"),),
    )
    result = invoke_cli(["tools", "list"])
    assert result.exit_code == 1
    assert "nyla.broken_builtin" in result.output and "PluginError" in result.output


def test_scripted_plugin_is_what_make_kernel_wraps() -> None:
    assert isinstance(ScriptedPlugin(ScriptedProvider(lambda r, i: "x")), ScriptedPlugin)
