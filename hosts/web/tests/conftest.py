"""Fixtures of the host's tests: a kernel on the test schema with a scripted model (that also
embeds), a tiny in-memory connector with its walker, the app over httpx's ASGI transport, and
tokens per role."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

import nyla_host.tables  # noqa: F401  (host tables are created with the kernel's)
from nyla_host.app import add_page, bare_app, build_state, mount, shutdown, startup
from nyla_host.state import HostSettings

from .memfs import MemoryPlugin, hash_embed


@pytest.fixture
def replies() -> list[Any]:
    """What the scripted model answers, in order (a test may replace the list's items)."""
    return []


@pytest.fixture
def provider(scripted, replies):
    def script(request, index):
        return replies[index] if index < len(replies) else f"answer {index}"

    return scripted(script, embed_fn=hash_embed)


@pytest.fixture
def memory_plugin() -> MemoryPlugin:
    return MemoryPlugin()


@pytest.fixture
def kernel(db, make_kernel, provider, memory_plugin, tmp_path):
    return make_kernel(
        provider,
        memory_plugin,
        db=db,
        settings={"knowledge": {"embedding_model": "scripted:model"}, "data_dir": tmp_path},
    )


@pytest.fixture
def host_settings() -> HostSettings:
    return HostSettings(default_model="scripted:model", ping_interval_s=15.0)


@pytest_asyncio.fixture
async def state(kernel, host_settings):
    state = build_state(kernel, settings=host_settings)
    await startup(state)
    try:
        yield state
    finally:
        await shutdown(state)


@pytest.fixture
def app(state):
    app = bare_app()
    mount(app, state)
    add_page(app)
    return app


@pytest_asyncio.fixture
async def client(app) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://host.test") as c:
        yield c


@pytest.fixture
def token_for(state):
    async def make(user: str = "alice", role: str = "user", mandate: str | None = "m1") -> dict:
        token, _ = await state.tokens.create(user, role=role, mandate_id=mandate)
        return {"Authorization": f"Bearer {token}"}

    return make


async def wait_run(state, run_id: str) -> None:
    """Wait until a run of this process ended (its task done)."""
    live = state.runs._live.get(run_id)
    if live is not None and live.task is not None:
        await asyncio.wait_for(asyncio.shield(live.task), 30)
