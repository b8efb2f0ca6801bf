"""Fixtures: a kernel with the Microsoft 365 connector over a fake SharePoint, the SharePoint
toolbox, and a user with one Microsoft 365 connection."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import pytest_asyncio

from .fake_sharepoint import FakeSharePoint

USER = "megan"


@pytest.fixture
def graph() -> FakeSharePoint:
    return FakeSharePoint()


@pytest_asyncio.fixture
async def kernel(db: Any, graph: FakeSharePoint, make_kernel: Any, monkeypatch: Any) -> Any:
    from cryptography.fernet import Fernet

    import nyla_connector_msft  # the tests' connector; the toolbox itself never imports it
    import nyla_toolbox_sharepoint

    monkeypatch.setenv("NYLA_MSFT_CLIENT_ID", "client-id")
    return make_kernel(
        nyla_connector_msft,
        nyla_toolbox_sharepoint,
        db=db,
        builtins=False,
        settings={"secret_key": Fernet.generate_key(), "transport": httpx.MockTransport(graph)},
    )


@pytest_asyncio.fixture
async def connection(kernel: Any) -> Any:
    from nyla.sdk.connectors import TokenGrant

    return await kernel.connections.add(
        "msft",
        user_id=USER,
        account="MeganB@contoso.onmicrosoft.com",
        grant=TokenGrant(
            access_token="access-1",
            refresh_token="refresh-1",
            expires_at=datetime.now(UTC) + timedelta(hours=1),
        ),
    )
