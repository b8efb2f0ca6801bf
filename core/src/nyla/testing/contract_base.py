"""The base of every contract suite, with the guard against deleted or overridden
contract tests."""

from __future__ import annotations

from typing import Any

import pytest

from nyla.plugins import PluginHost


class ContractSuite:
    """Base of every contract suite: holds the guard against deleted or overridden tests."""

    #: the contract class whose tests a subclass must keep (set by each suite)
    contract_class: type | None = None

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
        assert not offenders, "contract tests changed: " + "; ".join(sorted(set(offenders)))


def _host_for(plugin: Any) -> PluginHost:
    return PluginHost.from_plugins([plugin], names=["plugin-under-test"])


class PluginContract(ContractSuite):
    """Checks shared by every plugin kind: it registers cleanly through the hooks."""

    @pytest.fixture
    def plugin(self) -> Any:
        """The plugin object (module or instance with hookimpls). Override."""
        raise NotImplementedError("override the `plugin` fixture with your plugin module")

    def test_plugin_registers_cleanly(self, plugin: Any) -> None:
        host = _host_for(plugin)
        record = host.records["plugin-under-test"]
        assert record.status == "ok", record.error
        assert record.hooks, "the plugin implements no hook"
