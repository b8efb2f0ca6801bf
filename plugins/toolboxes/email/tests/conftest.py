"""Fixtures: a kernel with the Microsoft 365 connector over a fake Outlook, the e-mail
toolbox, and a user with one Outlook connection."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import pytest_asyncio

from .fake_outlook import FakeOutlook

USER = "megan"


@pytest.fixture
def outlook() -> FakeOutlook:
    return FakeOutlook()


@pytest_asyncio.fixture
async def kernel(db: Any, outlook: FakeOutlook, make_kernel: Any, monkeypatch: Any) -> Any:
    from cryptography.fernet import Fernet

    import nyla_connector_msft  # the tests' connector; the toolbox itself never imports it
    import nyla_toolbox_email

    monkeypatch.setenv("NYLA_MSFT_CLIENT_ID", "client-id")
    return make_kernel(
        nyla_connector_msft,
        nyla_toolbox_email,
        db=db,
        builtins=False,
        settings={"secret_key": Fernet.generate_key(), "transport": httpx.MockTransport(outlook)},
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
