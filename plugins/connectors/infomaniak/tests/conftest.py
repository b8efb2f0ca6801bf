"""Fixtures: a session on an Infomaniak connection over a scripted transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
import pytest_asyncio


class Vendor:
    """Routes ``(METHOD, path)`` to a handler; records every request."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Callable[[httpx.Request], httpx.Response]] = {}
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        handler = self.routes.get((request.method, request.url.path))
        if handler is None:
            return httpx.Response(
                404, json={"result": "error", "error": {"code": "object_not_found"}}
            )
        return handler(request)


@pytest.fixture
def vendor() -> Vendor:
    return Vendor()


@pytest_asyncio.fixture
async def open_session(db: Any, vendor: Vendor) -> AsyncIterator[Callable[[], Any]]:
    """``async with open_session() as session`` on a fresh Infomaniak connection."""
    import nyla_connector_infomaniak
    from nyla.sdk.connectors import TokenGrant
    from nyla.testing import connection_service

    async def no_sleep(_: float) -> None:
        return None

    service = connection_service(
        nyla_connector_infomaniak, db=db, vendor=vendor, sleep=no_sleep, names=["infomaniak"]
    )
    conn = await service.add(
        "infomaniak",
        user_id="u1",
        account="ada@example.ch",
        grant=TokenGrant(access_token="pat-1"),
        settings={"driveId": "140946"},
    )
    yield lambda: service.open(conn.id, user_id="u1")
