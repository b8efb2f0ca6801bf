"""Fixtures: a kernel with the Microsoft 365 connector over a fake Outlook, the e-mail
toolbox, and a user with one Outlook connection."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from nyla.testing import add_connection

from .fake_outlook import FakeOutlook

USER = "megan"


@pytest.fixture
def outlook() -> FakeOutlook:
    return FakeOutlook()


@pytest.fixture
def kernel(vendor_kernel: Any, outlook: FakeOutlook) -> Any:
    import nyla_connector_msft  # the tests' connector; the toolbox itself never imports it
    import nyla_toolbox_email

    env = {"NYLA_MSFT_CLIENT_ID": "client-id"}
    return vendor_kernel(outlook, nyla_connector_msft, nyla_toolbox_email, env=env)


@pytest_asyncio.fixture
async def connection(kernel: Any) -> Any:
    return await add_connection(kernel, "msft", USER, "MeganB@contoso.onmicrosoft.com")
