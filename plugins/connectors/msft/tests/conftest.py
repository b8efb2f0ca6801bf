"""Fixtures: a kernel connection service over a scripted Graph transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import pytest_asyncio

from nyla.testing.vendor_spec import take_violations


class Graph:
    """A scripted Graph: ``routes`` maps ``(METHOD, path)`` to a handler (or a list of
    answers served in turn); every request is recorded."""

    def __init__(self) -> None:
        from .graph_wire import graph_spec

        self.routes: dict[tuple[str, str], Any] = {}
        self.requests: list[httpx.Request] = []
        self.token_requests: list[httpx.Request] = []
        self.access = "access-1"
        self._checked = graph_spec().guard(self._answer)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        return self._checked(request)  # type: ignore[no-any-return]

    def _answer(self, request: httpx.Request) -> httpx.Response:
        if request.url.host == "login.microsoftonline.com":
            self.token_requests.append(request)
            self.access = f"access-{len(self.token_requests) + 1}"
            return httpx.Response(
                200,
                json={
                    "token_type": "Bearer",
                    "scope": "Mail.ReadWrite",
                    "expires_in": 3599,
                    "access_token": self.access,
                    "refresh_token": f"refresh-{len(self.token_requests) + 1}",
                },
            )
        self.requests.append(request)
        # a pre-authenticated download URL (another host) carries its own token
        graph_host = request.url.host == "graph.microsoft.com"
        if graph_host and request.headers.get("authorization") != f"Bearer {self.access}":
            from .graph_wire import graph_error

            return graph_error(401, 401)
        key = (request.method, request.url.path.removeprefix("/v1.0"))
        answer = self.routes.get(key)
        if answer is None:
            return httpx.Response(
                404, json={"error": {"code": "itemNotFound", "message": str(key)}}
            )
        if isinstance(answer, list):
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        from .graph_wire import partial

        return partial(request, answer(request) if callable(answer) else answer)


class Sleeps:
    """Delays the HTTP layer asked for (never slept)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture(autouse=True)
def _vendor_documented() -> Iterator[None]:
    """Fails a test in which a fake answered, or nyla sent, what Graph's metadata does not
    allow (even where the connector caught the error the fake raised)."""
    take_violations()
    yield
    assert not take_violations(), "exchanges Graph's API description does not allow"


@pytest.fixture
def graph() -> Graph:
    return Graph()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest_asyncio.fixture
async def open_session(
    db: Any, graph: Graph, sleeps: Sleeps, monkeypatch: Any
) -> AsyncIterator[Callable[[], Any]]:
    """``async with open_session() as session``: a session on a fresh msft connection."""
    import nyla_connector_msft
    from nyla.sdk.connectors import TokenGrant
    from nyla.testing import connection_service

    monkeypatch.setenv("NYLA_MSFT_CLIENT_ID", "client-id")
    service = connection_service(
        nyla_connector_msft, db=db, vendor=graph, sleep=sleeps, names=["msft"]
    )
    conn = await service.add(
        "msft",
        user_id="u1",
        account="megan@contoso.com",
        grant=TokenGrant(
            access_token="access-1",
            refresh_token="refresh-1",
            expires_at=datetime.now(UTC) + timedelta(hours=1),
        ),
    )
    yield lambda: service.open(conn.id, user_id="u1")
