"""Contract suites every plugin's tests subclass (in the way ``langchain-tests`` serves
LangChain integrations).

A plugin writes ``class TestMyProvider(ProviderContract)`` and overrides a few fixtures (the
object under test, a fake HTTP transport, sample data); it gets the whole suite. Capability
properties (``supports_streaming`` ...) decide which tests apply. A plugin cannot silently
delete or override a contract test: the guard test fails unless the override is marked
``pytest.mark.xfail(reason=...)``.
"""

from __future__ import annotations

from nyla.testing.connector_contract import ConnectorContract
from nyla.testing.contract_base import ContractSuite, PluginContract
from nyla.testing.feature_contract import FeatureContract
from nyla.testing.neutralizer_contract import NeutralizerContract
from nyla.testing.provider_contract import ProviderContract
from nyla.testing.toolbox_contract import ToolboxContract
from nyla.testing.walker_contract import WalkerContract

__all__ = [
    "ConnectorContract",
    "ContractSuite",
    "FeatureContract",
    "NeutralizerContract",
    "PluginContract",
    "ProviderContract",
    "ToolboxContract",
    "WalkerContract",
]
