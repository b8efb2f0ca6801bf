"""Fixtures of the host's tests: a kernel on the test schema with a scripted model (that also
embeds), a tiny in-memory connector with its walker, the app over httpx's ASGI transport, and
tokens per role."""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

import nyla_host.tables  # noqa: F401  (host tables are created with the kernel's)
from nyla import (
    DownloadedFile,
    EntryPage,
    ExternalEntry,
    WalkResult,
    hookimpl,
)
from nyla_host.app import add_page, bare_app, build_state, mount, shutdown, startup
from nyla_host.state import HostSettings

pytest_plugins = ["nyla.testing.fixtures"]

DIMS = 32
FILES = {
    "/docs/handbook.txt": b"The travel policy allows second class train tickets for trips.",
    "/docs/notes.txt": b"Quarterly numbers are reviewed by the finance team every March.",
}


def hash_embed(texts: list[str]) -> list[list[float]]:
    """Bag-of-words hashing embedder: texts sharing words are close."""
    out = []
    for text in texts:
        vec = [0.0] * DIMS
        for word in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            vec[h % DIMS] += 1.0 if (h >> 32) & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        out.append([v / norm if any(vec) else 1.0 / math.sqrt(DIMS) for v in vec])
    return out


class MemoryConnector:
    """A connector over the in-memory :data:`FILES` (service ``memfs``)."""

    service = "memfs"

    async def browse(self, connection, path="", page_token=None, limit=50) -> EntryPage:
        entries = [
            ExternalEntry(id=p, name=p.rsplit("/", 1)[-1], path=p, size=len(c))
            for p, c in FILES.items()
            if p.startswith(path or "/")
        ]
        return EntryPage(entries=entries)

    async def search(self, connection, query, scope_path="", page_token=None, limit=25):
        return EntryPage()

    async def download(self, connection, entry_id: str) -> DownloadedFile:
        return DownloadedFile(name=entry_id.rsplit("/", 1)[-1], content=FILES[entry_id])

    def normalize_metadata(self, entry) -> dict[str, Any]:
        return {}


class MemoryWalker:
    """Walks :data:`FILES` below each data source's path; stops at ``max_items``."""

    id = "memfs-walker"
    services = ["memfs"]

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None

    async def walk(self, data_sources, progress, ingest, limits=None) -> list[WalkResult]:
        if self.gate is not None:
            await self.gate.wait()
        results = []
        max_items = (limits or {}).get("max_items", 1000)
        for ds in data_sources:
            result = WalkResult(data_source_id=ds["id"])
            paths = [p for p in FILES if p.startswith(ds["path"].rstrip("/") + "/")]
            for path in paths:
                result.items_seen += 1
                if result.items_indexed >= max_items:
                    result.stopped_at_limit = True
                    break
                await ingest(
                    DownloadedFile(name=path.rsplit("/", 1)[-1], content=FILES[path]),
                    data_source_id=ds["id"],
                    entry_id=path,
                    entry_path=path,
                )
                result.items_indexed += 1
                result.bytes_indexed += len(FILES[path])
                progress.update(result.items_indexed, len(paths), path)
            results.append(result)
        return results


class MemoryPlugin:
    """Contributes the connector and its walker."""

    def __init__(self) -> None:
        self.walker = MemoryWalker()

    @hookimpl
    def nyla_connectors(self) -> list[Any]:
        return [MemoryConnector()]

    @hookimpl
    def nyla_walkers(self) -> list[Any]:
        return [self.walker]


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
def kernel(db, make_kernel, provider, memory_plugin):
    return make_kernel(
        provider,
        memory_plugin,
        db=db,
        settings={"knowledge": {"embedding_model": "scripted:model"}},
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
