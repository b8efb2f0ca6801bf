"""Fixtures: a kernel with the Microsoft 365 connector over a fake SharePoint, the SharePoint
toolbox, and a user with one Microsoft 365 connection."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from nyla.testing import add_connection

from .fake_sharepoint import FakeSharePoint

USER = "megan"


@pytest.fixture
def graph() -> FakeSharePoint:
    return FakeSharePoint()


@pytest.fixture
def kernel(vendor_kernel: Any, graph: FakeSharePoint) -> Any:
    import nyla_connector_msft  # the tests' connector; the toolbox itself never imports it
    import nyla_toolbox_sharepoint

    env = {"NYLA_MSFT_CLIENT_ID": "client-id"}
    return vendor_kernel(graph, nyla_connector_msft, nyla_toolbox_sharepoint, env=env)


@pytest_asyncio.fixture
async def connection(kernel: Any) -> Any:
    return await add_connection(kernel, "msft", USER, "MeganB@contoso.onmicrosoft.com")
