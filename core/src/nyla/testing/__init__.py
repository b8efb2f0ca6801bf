"""Test support for nyla and its plugins: contract suites, a scripted model, fixtures.

Installed with ``nyla[testing]``, nyla's pytest plugin (``nyla.pytest_plugin``, entry point
``pytest11``) provides the fixtures of :mod:`nyla.testing.fixtures` and assertion rewriting
for this package; plugins subclass the contract suites in ``tests/test_contract.py`` and run
them with a plain ``pytest``. Integration tests that check what the kernel stored import the
tables from :mod:`nyla.testing.tables`.
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
