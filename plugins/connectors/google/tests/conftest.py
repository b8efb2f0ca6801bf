"""Fixtures: a kernel connection service over Google faked at the wire (the contract suite's
fake vendor in front of this package's wires), for the vendor-specific tests."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
import pytest_asyncio

from nyla.testing.vendor_spec import take_violations


class Sleeps:
    """Delays the HTTP layer and the budgets asked for: recorded, never slept; they move a
    fake clock on instead (the budgets' clock), so a budget's window passes at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.now += max(0.0, seconds)


@pytest.fixture(autouse=True)
def _vendor_documented() -> Iterator[None]:
    """Fails a test in which a fake answered, or nyla sent, what Google's discovery documents
    do not allow (even where the connector caught the error the fake raised)."""
    take_violations()
    yield
    assert not take_violations(), "exchanges Google's API descriptions do not allow"


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest_asyncio.fixture
async def google(db: Any, sleeps: Sleeps, monkeypatch: Any) -> AsyncIterator[Callable[..., Any]]:
    """``async with google(wire, corpus, handler=None) as (session, vendor)``: a session on a
    fresh Google connection; ``handler`` may wrap the fake vendor (async handlers too)."""
    from contextlib import asynccontextmanager

    import nyla_connector_google
    from nyla.sdk.connectors import Limiter
    from nyla.testing import connection_service
    from nyla.testing.fake_vendor import FakeVendor

    monkeypatch.setenv("NYLA_GOOGLE_CLIENT_ID", "client-id")

    @asynccontextmanager
    async def open_session(wire: Any, corpus: Any, wrap: Any = None) -> AsyncIterator[Any]:
        vendor = FakeVendor(wire, corpus, wire.adapter().oauth.token_url)
        handler = wrap(vendor) if wrap else vendor
        if wrap and wire.spec is not None:
            # what the wrapper answers itself is checked too (and the fake's answers twice)
            handler = wire.spec.guard(handler)
        service = connection_service(
            nyla_connector_google,
            db=db,
            vendor=handler,
            sleep=sleeps,
            limiter=Limiter(clock=sleeps.clock, sleep=sleeps),
            names=["google"],
        )
        conn = await service.add(
            "google",
            user_id="megan",
            account="megan@example.com",
            grant=wire.grant(),
            connection_id=f"conn-{uuid.uuid4().hex[:8]}",
        )
        async with service.open(conn.id, user_id="megan") as session:
            yield session, vendor

    yield open_session
