"""A token revoked through one host stops working on every other host at once, not when
their verified-token caches run out: the revocation is a NOTIFY each host listens to."""

from __future__ import annotations

import asyncio

import pytest

from nyla.host import Kernel
from nyla_host.tokens import REVOKED_CHANNEL, TokenStore

pytestmark = pytest.mark.db


async def test_a_token_revoked_on_one_host_is_refused_by_another_at_once(db):
    host_a, host_b = TokenStore(db, cache_ttl_s=600), TokenStore(db, cache_ttl_s=600)
    kernel_b = Kernel(db=db)
    bus = kernel_b.runs.bus
    bus.listen(REVOKED_CHANNEL, host_b.forget)
    assert await bus.wait_connected()
    token, info = await host_a.create("alice", name="laptop")
    assert (await host_b.verify(token)).user_id == "alice"  # now in B's cache for 10 min
    assert await host_a.revoke(info.id) is True
    for _ in range(200):
        if await host_b.verify(token) is None:
            break
        await asyncio.sleep(0.05)
    assert await host_b.verify(token) is None, "host B still trusts a revoked token"
    await kernel_b.aclose()
