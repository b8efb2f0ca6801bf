"""The repository's own test session (not nyla's pytest plugin, which plugin authors get).

``make test`` runs each test file in one of its workers, handing out files in the order
collected here (``--no-loadscope-reorder``). Files marked ``long`` (minutes each) go first,
the others by their number of tests, most first, as pytest-xdist would order them itself:
a file of minutes handed out last would leave the other workers idle while it finishes, and
xdist's own order put the one-test schema fuzz at the very end. The sort is stable and the
same in every worker, which xdist requires; a file's tests keep their order."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    order = sorted(
        files.values(),
        key=lambda tests: (tests[0].get_closest_marker("long") is None, -len(tests)),
    )
    items[:] = [item for tests in order for item in tests]
