"""A token revoked through one host stops working on every other host at once, not when
their verified-token caches run out: the revocation is a NOTIFY each host listens to."""

from __future__ import annotations

import asyncio

import pytest

from nyla.host import Kernel
from nyla_host.tokens import REVOKED_CHANNEL, TokenStore

pytestmark = pytest.mark.db


async def _refused_within_10_s(host: TokenStore, token: str) -> None:
    """Wait until ``host`` refuses ``token`` (the NOTIFY reached it); fail after 10 s."""
    for _ in range(200):
        if await host.verify(token) is None:
            return
        await asyncio.sleep(0.05)
    assert await host.verify(token) is None, "host B still trusts a revoked token"


async def test_a_token_revoked_on_one_host_is_refused_by_another_at_once(db):
    host_a, host_b = TokenStore(db, cache_ttl_s=600), TokenStore(db, cache_ttl_s=600)
    kernel_b = Kernel(db=db)
    bus = kernel_b.runs.bus
    bus.listen(REVOKED_CHANNEL, host_b.forget)
    assert await bus.wait_connected()
    token, info = await host_a.create("alice", name="laptop")
    assert (await host_b.verify(token)).user_id == "alice"  # now in B's cache for 10 min
    assert await host_a.revoke(info.id) is True
    await _refused_within_10_s(host_b, token)
    await kernel_b.aclose()


async def test_a_listening_host_keeps_verified_tokens_longer_and_drops_them_with_its_listener(db):
    """While the revocation listener is connected a verified token is trusted for
    HEARD_TTL_S (no read past CACHE_TTL_S); a revocation elsewhere still ends it at once; a
    listener that loses its connection takes every such entry with it (a NOTIFY may have
    been lost), so the row is read again."""
    from nyla_host.tokens import CACHE_TTL_S, HEARD_TTL_S

    now = [1000.0]
    host_a = TokenStore(db)
    host_b = TokenStore(db, clock=lambda: now[0])
    kernel_b = Kernel(db=db)
    bus = kernel_b.runs.bus
    bus.listen(REVOKED_CHANNEL, host_b.forget)
    host_b.heard = bus.listening
    assert await bus.wait_connected()
    reads = 0
    real = host_b._read

    async def counted(token_id, digest):
        nonlocal reads
        reads += 1
        return await real(token_id, digest)

    host_b._read = counted  # type: ignore[method-assign]
    token, info = await host_a.create("alice")
    assert (await host_b.verify(token)).user_id == "alice"
    now[0] += CACHE_TTL_S * 3
    assert (await host_b.verify(token)).user_id == "alice" and reads == 1  # kept, not read
    now[0] += HEARD_TTL_S
    assert await host_b.verify(token) is not None and reads == 2  # HEARD_TTL_S bounds it

    # the listener loses its connection: the entry kept while it listened goes at once
    other, other_info = await host_a.create("bob")
    assert await host_b.verify(other) is not None and reads == 3
    bus._lost()
    assert await host_b.verify(other) is not None and reads == 4  # read again
    assert await host_a.revoke(other_info.id)
    now[0] += CACHE_TTL_S + 0.01
    assert await host_b.verify(other) is None  # kept the short bound at most

    # heard again: a revocation elsewhere ends a long-kept entry at once
    await kernel_b.aclose()
    bus.listen(REVOKED_CHANNEL, host_b.forget)
    assert await bus.wait_connected()
    assert await host_b.verify(token) is not None
    assert await host_a.revoke(info.id)
    await _refused_within_10_s(host_b, token)
    await kernel_b.aclose()
