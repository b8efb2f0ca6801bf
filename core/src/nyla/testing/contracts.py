"""Contract suites every plugin's tests subclass (in the way ``langchain-tests`` serves
LangChain integrations).

A plugin writes ``class TestMyProvider(ProviderContract)`` and overrides a few fixtures (the
object under test, a fake HTTP transport, sample data); it gets the whole suite. Which tests
apply follows from what the plugin declares (its models' capabilities, the methods its
connector implements), never from a switch that skips silently. A plugin cannot silently
delete or override a contract test: the guard test fails unless the override is marked
``pytest.mark.xfail(reason=...)``. The suites check the plugin in a host that also holds
nyla's built-ins, so a name clash with them fails the suite.
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
