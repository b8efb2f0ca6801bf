"""Contract suite for model provider plugins."""

from __future__ import annotations

import inspect
from typing import Any

from nyla.checks import check_model_spec
from nyla.testing.contract_base import PluginContract, _host_for


class ProviderContract(PluginContract):
    """Contract for model provider plugins. Override ``plugin`` and, for wire tests, the
    fixtures the AI service issue defines (``provider`` built over an httpx MockTransport)."""

    supports_chat: bool = True
    supports_tools: bool = True
    supports_streaming: bool = True
    supports_embeddings: bool = False
    supports_web_search: bool = False

    def test_models_are_complete(self, plugin: Any) -> None:
        host = _host_for(plugin)
        assert host.providers, "no provider registered"
        for pid, provider in host.providers.items():
            specs = provider.models()
            assert specs, f"provider {pid} lists no models"
            for spec in specs:
                assert check_model_spec(spec, pid) == []

    def test_discovery_does_not_import_vendor_sdk(self, plugin: Any) -> None:
        import subprocess
        import sys

        module = plugin.__name__ if inspect.ismodule(plugin) else type(plugin).__module__
        code = (
            "import sys, importlib\n"
            f"m = importlib.import_module({module!r})\n"
            "ps = [p for f in [getattr(m, 'nyla_providers', None)] if f for p in f()]\n"
            "[p.models() for p in ps]\n"
            "bad = [n for n in ('openai', 'anthropic', 'mistralai') if n in sys.modules]\n"
            "print(','.join(bad))\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        assert out == "", f"listing models imported vendor SDKs: {out}"
