"""Test support for nyla and its plugins: contract suites, a scripted model, fixtures.

Plugins load the fixtures with ``pytest_plugins = ["nyla.testing.fixtures"]`` in their
``conftest.py`` and subclass the contract suites in ``tests/test_contract.py``.
"""

from nyla.agent.registry import ToolRegistry, before_call_hook
from nyla.testing.contracts import (
    ConnectorContract,
    ContractSuite,
    FeatureContract,
    NeutralizerContract,
    ProviderContract,
    ToolboxContract,
    WalkerContract,
)
from nyla.testing.helpers import invoke_cli
from nyla.testing.scripted import ScriptedProvider, scripted_reply

__all__ = [
    "ConnectorContract",
    "ContractSuite",
    "FeatureContract",
    "NeutralizerContract",
    "ProviderContract",
    "ScriptedProvider",
    "ToolRegistry",
    "ToolboxContract",
    "WalkerContract",
    "before_call_hook",
    "invoke_cli",
    "scripted_reply",
]
