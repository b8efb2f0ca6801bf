"""Discovery and isolation: a broken plugin is reported by name and left out, the rest runs."""

from __future__ import annotations

import types
from typing import Any

import pytest

import nyla
from nyla.errors import PluginError
from nyla.models.neutralize import Finding
from nyla.models.tools import Tool, Toolbox, ToolContext
from nyla.plugins import PluginHost


class Detector:
    def __init__(self, id: str) -> None:
        self.id = id

    def find(self, text: str) -> list[Finding]:
        return []


async def _echo(ctx: ToolContext, text: str) -> str:
    """Echo the text."""
    return text


def toolbox_plugin(toolbox_id: str, tool_name: str = "echo") -> Any:
    class Plugin:
        @nyla.hookimpl
        def nyla_toolboxes(self) -> list[Toolbox]:
            return [Toolbox(id=toolbox_id, tools=[Tool.from_function(_echo, name=tool_name)])]

    return Plugin()


def neutralizer_plugin(nid: str) -> Any:
    class Plugin:
        @nyla.hookimpl
        def nyla_neutralizers(self) -> list[Any]:
            return [Detector(nid)]

    return Plugin()


def test_good_plugins_contribute():
    host = PluginHost.from_plugins(
        [toolbox_plugin("box"), neutralizer_plugin("pii")], names=["tb", "nz"]
    )
    assert set(host.toolboxes) == {"box"}
    assert set(host.neutralizers) == {"pii"}
    assert host.records["tb"].contributes == {"toolboxes": ["box"], "tools": ["echo"]}
    assert host.records["nz"].hooks == ["nyla_neutralizers"]
    assert host.owner_of("tools", "echo") == "tb"
    assert host.failures == []


def test_hook_that_raises_is_left_out_and_others_stay():
    class Raises:
        @nyla.hookimpl
        def nyla_toolboxes(self):
            raise RuntimeError("boom")

    host = PluginHost.from_plugins([Raises(), toolbox_plugin("box")], names=["bad", "good"])
    assert host.records["bad"].status == "failed"
    assert "raised RuntimeError: boom" in host.records["bad"].error
    assert set(host.toolboxes) == {"box"}


def test_wrong_return_type_is_reported():
    class Dicts:
        @nyla.hookimpl
        def nyla_toolboxes(self):
            return [{"id": "x"}]

    host = PluginHost.from_plugins([Dicts()], names=["dicts"])
    record = host.records["dicts"]
    assert record.status == "failed"
    assert "returned dict, expected Toolbox" in record.error
    assert host.toolboxes == {}


def test_unknown_hook_is_caught():
    class Misspelt:
        @nyla.hookimpl
        def nyla_toolbox(self):  # missing the s
            return []

    host = PluginHost.from_plugins([Misspelt()], names=["misspelt"])
    assert host.records["misspelt"].status == "failed"
    assert "nyla_toolbox" in host.records["misspelt"].error


def test_clashing_id_leaves_the_later_plugin_out_whole():
    first = toolbox_plugin("box", tool_name="echo")
    clash = toolbox_plugin("other", tool_name="echo")  # same tool name
    host = PluginHost.from_plugins([first, clash], names=["a-first", "b-clash"])
    assert host.records["a-first"].status == "ok"
    rec = host.records["b-clash"]
    assert rec.status == "failed"
    assert "'echo' is already registered by plugin 'a-first'" in rec.error
    assert set(host.toolboxes) == {"box"}  # nothing of the clashing plugin remains


def test_strict_mode_raises(monkeypatch: pytest.MonkeyPatch):
    class Raises:
        @nyla.hookimpl
        def nyla_neutralizers(self):
            raise ValueError("nope")

    host = PluginHost.from_plugins([Raises()], names=["bad"])
    with pytest.raises(PluginError, match="bad: nyla_neutralizers"):
        host.raise_on_failures()


def _fake_entry_points(monkeypatch: pytest.MonkeyPatch, modules: dict[str, Any]) -> list[str]:
    """Entry points in nyla.toolboxes pointing at in-memory modules; records imports."""
    import sys

    imported: list[str] = []

    class EP:
        def __init__(self, name: str, value: str) -> None:
            self.name, self.value, self.group = name, value, "nyla.toolboxes"
            self.module = value

        def load(self) -> Any:
            imported.append(self.name)
            if self.value not in sys.modules:
                raise ImportError(f"No module named {self.value!r}")
            return sys.modules[self.value]

    eps = [EP(name, f"fake_plugin_{name.replace('-', '_')}") for name in modules]
    for ep, module in zip(eps, modules.values(), strict=True):
        if module is not None:
            monkeypatch.setitem(sys.modules, ep.value, module)
    from stevedore import ExtensionManager

    from nyla.plugins import ENTRY_POINT_GROUPS

    for group in ENTRY_POINT_GROUPS:
        monkeypatch.setitem(ExtensionManager.ENTRY_POINT_CACHE, group, [])
    monkeypatch.setitem(ExtensionManager.ENTRY_POINT_CACHE, "nyla.toolboxes", eps)
    return imported


def _module(toolbox_id: str, tool_name: str) -> types.ModuleType:
    module = types.ModuleType(f"mod_{toolbox_id}")
    plugin = toolbox_plugin(toolbox_id, tool_name)
    module.nyla_toolboxes = plugin.nyla_toolboxes  # type: ignore[attr-defined]
    return module


def test_discovery_reports_import_failure_and_keeps_going(monkeypatch: pytest.MonkeyPatch):
    _fake_entry_points(monkeypatch, {"good": _module("box", "echo"), "broken": None})
    host = PluginHost.discover(builtins=False, strict=False)
    assert host.records["good"].status == "ok"
    assert host.records["broken"].status == "failed"
    assert "import failed" in host.records["broken"].error
    assert set(host.toolboxes) == {"box"}


def test_nyla_plugins_filters_names_before_import(monkeypatch: pytest.MonkeyPatch):
    imported = _fake_entry_points(
        monkeypatch, {"one": _module("one", "t1"), "two": _module("two", "t2")}
    )
    monkeypatch.setenv("NYLA_PLUGINS", "one")
    host = PluginHost.discover(builtins=False, strict=False)
    assert imported == ["one"]
    assert host.records["two"].status == "disabled"
    assert set(host.toolboxes) == {"one"}


def test_disable_plugins_leaves_one_out(monkeypatch: pytest.MonkeyPatch):
    imported = _fake_entry_points(
        monkeypatch, {"one": _module("one", "t1"), "two": _module("two", "t2")}
    )
    monkeypatch.setenv("NYLA_DISABLE_PLUGINS", "two")
    host = PluginHost.discover(builtins=False, strict=False)
    assert "two" not in imported
    assert set(host.toolboxes) == {"one"}


def test_strict_env_turns_failures_into_errors(monkeypatch: pytest.MonkeyPatch):
    _fake_entry_points(monkeypatch, {"broken": None})
    monkeypatch.setenv("NYLA_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="broken: import failed"):
        PluginHost.discover(builtins=False)


def test_record_json_shape():
    host = PluginHost.from_plugins([toolbox_plugin("box")], names=["tb"])
    data = host.records["tb"].to_dict()
    for key in ("name", "distribution", "version", "group", "status", "error", "contributes"):
        assert key in data
    assert data["status"] == "ok" and data["error"] is None


def test_add_plugin_to_a_built_host_keeps_isolation():
    host = PluginHost.from_plugins([toolbox_plugin("box")], names=["tb"])
    record = host.add_plugin(neutralizer_plugin("late"), "late")
    assert record.status == "ok" and set(host.neutralizers) == {"late"}
    clash = host.add_plugin(toolbox_plugin("box2", tool_name="echo"), "clash")
    assert clash.status == "failed" and "already registered by plugin 'tb'" in clash.error
    assert set(host.toolboxes) == {"box"}
    with pytest.raises(PluginError, match="already registered"):
        host.add_plugin(neutralizer_plugin("again"), "late")


# An entry point named like a plugin of another group is a recorded failure (issue 12),
# visible in the inspector and to strict mode, never skipped without a trace.


class _EntryPoint:
    def __init__(self, name: str, value: str, group: str) -> None:
        self.name, self.value, self.group, self.module = name, value, group, value

    def load(self) -> Any:
        import sys

        return sys.modules[self.value]


@pytest.fixture
def two_groups_one_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from stevedore import ExtensionManager

    from nyla.plugins import ENTRY_POINT_GROUPS

    first = types.ModuleType("fake_first_local")
    first.nyla_toolboxes = toolbox_plugin("first", "t1").nyla_toolboxes  # type: ignore[attr-defined]
    second = types.ModuleType("fake_second_local")
    second.nyla_toolboxes = toolbox_plugin("second", "t2").nyla_toolboxes  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_first_local", first)
    monkeypatch.setitem(sys.modules, "fake_second_local", second)
    for group in ENTRY_POINT_GROUPS:
        monkeypatch.setitem(ExtensionManager.ENTRY_POINT_CACHE, group, [])
    groups = list(ENTRY_POINT_GROUPS)
    monkeypatch.setitem(
        ExtensionManager.ENTRY_POINT_CACHE,
        groups[0],
        [_EntryPoint("local", "fake_first_local", groups[0])],
    )
    monkeypatch.setitem(
        ExtensionManager.ENTRY_POINT_CACHE,
        groups[1],
        [_EntryPoint("local", "fake_second_local", groups[1])],
    )


def test_the_second_plugin_of_a_name_is_recorded_as_failed(two_groups_one_name):
    host = PluginHost.discover(builtins=False, strict=False)
    assert host.records["local"].status == "ok"
    clashes = [r for key, r in host.records.items() if key != "local" and r.name == "local"]
    assert len(clashes) == 1
    assert clashes[0].status == "failed"
    assert "already used" in clashes[0].error and "rename it" in clashes[0].error
    assert set(host.toolboxes) == {"first"}  # the clashing plugin contributes nothing


def test_strict_mode_refuses_a_name_clash(two_groups_one_name, monkeypatch):
    monkeypatch.setenv("NYLA_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="already used"):
        PluginHost.discover(builtins=False)
