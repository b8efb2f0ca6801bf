"""The fixtures come from nyla's pytest plugin (nyla.testing, installed with nyla[testing]);
every exchange with the fake ClickUp is checked against ClickUp's API description."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nyla.testing.vendor_spec import take_violations


@pytest.fixture(autouse=True)
def _vendor_documented() -> Iterator[None]:
    """Fails a test in which the fake answered, or nyla sent, what ClickUp does not document
    (even where the connector caught the error the fake raised)."""
    take_violations()
    yield
    assert not take_violations(), "exchanges ClickUp's API description does not allow"
