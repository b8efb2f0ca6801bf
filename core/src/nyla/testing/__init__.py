"""Test support for nyla and its plugins: contract suites, a scripted model, fixtures.

Installed with ``nyla[testing]``, nyla's pytest plugin (``nyla.pytest_plugin``, entry point
``pytest11``) provides the fixtures of :mod:`nyla.testing.fixtures` and assertion rewriting
for this package; plugins subclass the contract suites in ``tests/test_contract.py`` and run
them with a plain ``pytest``. Integration tests that check what the kernel stored import the
tables from :mod:`nyla.testing.tables`. Tests that build a kernel, a connection service or
open the test database themselves (in a worker process, with an injected transport or sleep)
use :mod:`nyla.testing.kernels` (``plugin_kernel``, ``connection_service``, ``open_database``,
...), never the kernel's classes.
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
from nyla.testing.kernels import (
    ai_service,
    connection_service,
    installed_kernel,
    open_database,
    plugin_host,
    plugin_kernel,
)
from nyla.testing.scripted import ScriptedProvider, scripted_reply
from nyla.testing.toolboxes import add_connection, call_tool, import_file, tool_context

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
    "add_connection",
    "ai_service",
    "before_call_hook",
    "call_tool",
    "connection_service",
    "import_file",
    "installed_kernel",
    "invoke_cli",
    "open_database",
    "plugin_host",
    "plugin_kernel",
    "scripted_reply",
    "tool_context",
]
