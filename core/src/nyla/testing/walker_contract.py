"""Contract suite for walker plugins."""

from __future__ import annotations

import inspect
from typing import Any

from nyla.testing.contract_base import PluginContract, _host_for


class WalkerContract(PluginContract):
    """Contract for walker plugins: which services each walks, and an async ``walk``."""

    def test_walkers_declare_services(self, plugin: Any) -> None:
        host = _host_for(plugin)
        assert host.walkers, "no walker registered"
        for walker in host.walkers.values():
            assert walker.services, f"walker {walker.id} names no connector service"
            assert inspect.iscoroutinefunction(walker.walk)
