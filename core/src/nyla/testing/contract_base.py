"""The base of every contract suite, with the guard against deleted or overridden
contract tests, and the host a suite checks a plugin in."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest

from nyla.plugins import BUILTIN_PLUGINS, PluginHost

#: the name the plugin under test is registered as in its contract host
UNDER_TEST = "plugin-under-test"


class ContractSuite:
    """Base of every contract suite: holds the guard against deleted or overridden tests."""

    #: the contract class whose tests a subclass must keep (set by each suite)
    contract_class: type | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Marks the class's own ``async def`` tests for pytest-asyncio, so a suite runs
        under a plain ``pytest`` without the host project's ``asyncio_mode = "auto"``."""
        super().__init_subclass__(**kwargs)
        for name, value in list(vars(cls).items()):
            if name.startswith("test_") and inspect.iscoroutinefunction(value):
                marks = getattr(value, "pytestmark", [])
                if not any(m.name == "asyncio" for m in marks):
                    pytest.mark.asyncio(value)

    def test_contract_tests_not_overridden(self) -> None:
        """Every contract test is present and unchanged, or its override is an xfail with a
        reason."""
        own = type(self)
        offenders = []
        for klass in own.__mro__:
            if klass is own or not issubclass(klass, ContractSuite) or klass is ContractSuite:
                continue
            if not klass.__module__.startswith("nyla.testing"):
                continue
            for name, original in vars(klass).items():
                if not name.startswith("test_") or not callable(original):
                    continue
                current = getattr(own, name, None)
                if current is original:
                    continue
                if current is None or not callable(current):
                    offenders.append(f"{name} was deleted")
                    continue
                marks = getattr(current, "pytestmark", [])
                if not any(m.name == "xfail" and m.kwargs.get("reason") for m in marks):
                    offenders.append(f"{name} is overridden without xfail(reason=...)")
        assert not offenders, f"{own.__name__}: contract tests changed: " + "; ".join(
            sorted(set(offenders))
        )


def _builtin_name(plugin: Any) -> str | None:
    """The built-in plugin name when ``plugin`` is one of the kernel's own modules."""
    for name, module_path in BUILTIN_PLUGINS:
        try:
            if importlib.import_module(module_path) is plugin:
                return name
        except Exception:  # a broken built-in is reported by the host itself
            continue
    return None


def contract_host(plugin: Any) -> tuple[PluginHost, str]:
    """The host a contract suite checks ``plugin`` in and the plugin's name in it.

    The host holds the kernel's built-ins beside the plugin, as an installed nyla would: a
    tool named like a built-in one (``readFile``) or a toolbox id the kernel holds (``core``)
    fails registration here, in the suite, not only once the plugin is installed.
    """
    builtin = _builtin_name(plugin)
    if builtin is not None:
        return PluginHost.from_plugins([], builtins=True), builtin
    return PluginHost.from_plugins([plugin], builtins=True, names=[UNDER_TEST]), UNDER_TEST


def _host_for(plugin: Any) -> PluginHost:
    return contract_host(plugin)[0]


def owned(plugin: Any, kind: str) -> dict[str, Any]:
    """The contributions of ``kind`` (``toolboxes``, ``neutralizers``...) that ``plugin``
    itself made in its contract host (the built-ins beside it left out)."""
    host, name = contract_host(plugin)
    everything: dict[str, Any] = getattr(host, kind)
    return {key: value for key, value in everything.items() if host.owner_of(kind, key) == name}


class PluginContract(ContractSuite):
    """Checks shared by every plugin kind: it registers cleanly through the hooks, next to
    the kernel's built-ins."""

    @pytest.fixture
    def plugin(self) -> Any:
        """The plugin object (module or instance with hookimpls). Override."""
        raise NotImplementedError("override the `plugin` fixture with your plugin module")

    def test_plugin_registers_cleanly(self, plugin: Any) -> None:
        host, name = contract_host(plugin)
        record = host.records[name]
        assert record.status == "ok", f"plugin {name} ({record.entry_point}) failed: {record.error}"
        assert record.hooks, f"plugin {name} ({record.entry_point}) implements no hook"
        assert not record.warnings, f"plugin {name}: " + "; ".join(record.warnings)
