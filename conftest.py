"""The repository's own test session (not nyla's pytest plugin, which plugin authors get).

``make test`` runs each test file in one of its workers, handing out files in the order
collected here (``--no-loadscope-reorder``). Files marked ``long`` (minutes each) go first,
the others by their number of tests, most first, as pytest-xdist would order them itself:
a file of minutes handed out last would leave the other workers idle while it finishes, and
xdist's own order put the one-test schema fuzz at the very end. The sort is stable and the
same in every worker, which xdist requires; a file's tests keep their order.

No test touches the user's own nyla home (``~/.local/share/nyla``: the embedded database a
``Kernel()`` without ``NYLA_DATABASE_URL`` starts). The session sets ``NYLA_HOME`` to a
directory of its own unless one is given; xdist's workers inherit it, and the session stops
the server started there and removes it at its end. (A test run beside another nyla
installation once saw that one stop the shared home's server under it.)"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

_OWN_HOME: Path | None = None
if not os.environ.get("NYLA_HOME"):
    _OWN_HOME = Path(tempfile.mkdtemp(prefix="nyla-test-home-"))
    os.environ["NYLA_HOME"] = str(_OWN_HOME)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _OWN_HOME is None:
        return
    from nyla.embedded import stop_embedded

    stop_embedded(_OWN_HOME)
    shutil.rmtree(_OWN_HOME, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    order = sorted(
        files.values(),
        key=lambda tests: (tests[0].get_closest_marker("long") is None, -len(tests)),
    )
    items[:] = [item for tests in order for item in tests]
