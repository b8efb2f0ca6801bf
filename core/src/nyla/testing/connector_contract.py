"""Contract suite for connector plugins."""

from __future__ import annotations

import inspect
from typing import Any

from nyla.testing.contract_base import PluginContract, _host_for


class ConnectorContract(PluginContract):
    """Contract for connector plugins: a service id and the adapter methods."""

    def test_adapters_have_service_and_methods(self, plugin: Any) -> None:
        host = _host_for(plugin)
        assert host.connectors, "no connector registered"
        for service, adapter in host.connectors.items():
            assert service
            for name in ("browse", "search", "download"):
                assert inspect.iscoroutinefunction(getattr(adapter, name)), name
