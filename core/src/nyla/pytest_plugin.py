"""nyla's pytest plugin, registered through the ``pytest11`` entry point of the ``nyla``
distribution: installing ``nyla[testing]`` is all a plugin's test folder needs.

- assertion rewriting for :mod:`nyla.testing` (contract failures show the values compared),
  registered before any of its modules is imported;
- the fixtures of :mod:`nyla.testing.fixtures` (``embedded_pg``, ``db``, ``make_host``...),
  so a plugin's ``conftest.py`` needs no ``pytest_plugins`` line;
- ``NYLA_LOCAL_EMBEDDINGS=hash`` unless the environment says otherwise: the local provider
  then offers its deterministic hashing embedder instead of the static model, so a test's
  ranking does not depend on learned weights (a test of the static model builds its own);
- ``NYLA_PLUGIN_CACHE=off`` unless the environment says otherwise: every command discovers
  the plugins as they are (see :mod:`nyla.plugin_cache`);
- the vendor-spec summary at the end of a session (how many exchanges each vendor's API
  description checked), with the counts of pytest-xdist's workers;
- the contract suites mark their own ``async def`` tests for pytest-asyncio
  (:class:`~nyla.testing.contract_base.ContractSuite`), so they run under a plain ``pytest``
  without ``asyncio_mode = "auto"`` in the host project's configuration.

Without the ``testing`` extra (no pytest-asyncio) the plugin does nothing, so installing nyla
never breaks an unrelated pytest run. ``-p no:nyla`` switches it off.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any

import pytest

pytest.register_assert_rewrite("nyla.testing")
# set at import (before any conftest builds a kernel); subprocesses inherit it
os.environ.setdefault("NYLA_LOCAL_EMBEDDINGS", "hash")
# tests replace entry points and plugin modules in place, which no cache key can see
os.environ.setdefault("NYLA_PLUGIN_CACHE", "off")

#: the fixtures need pytest-asyncio (the ``testing`` extra); without it, register nothing
pytest_plugins = (
    ["nyla.testing.fixtures"] if importlib.util.find_spec("pytest_asyncio") is not None else []
)

_VENDOR_SPEC = "nyla.testing.vendor_spec"


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A pytest-xdist worker hands its vendor-spec counts to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    module = sys.modules.get(_VENDOR_SPEC)
    if workeroutput is not None and module is not None:
        workeroutput["nyla_vendor_specs"] = module.counts()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """The controller gathers each finished worker's vendor-spec counts."""
    reported = getattr(node, "workeroutput", {}).get("nyla_vendor_specs")
    if reported:
        importlib.import_module(_VENDOR_SPEC).add_counts(reported)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many exchanges were checked against each vendor's API description (the connector
    tests' fakes are validated against them: :mod:`nyla.testing.vendor_spec`)."""
    module = sys.modules.get(_VENDOR_SPEC)
    for line in module.summary() if module is not None else []:
        terminalreporter.write_line(f"vendor spec: {line}")
