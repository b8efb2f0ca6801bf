"""An in-memory connector (service ``memfs``), its walker and a hashing embedder: the data
side of the host's tests. Also loaded by the served process of the end-to-end tests
(``nyla serve --plugin memfs:MemoryPlugin``); there ``NYLA_E2E_RELEASE`` names a file the
walker waits for before it walks, so a test sees the running job first."""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import re
from pathlib import Path
from typing import Any

from nyla import (
    DownloadedFile,
    EntryPage,
    ExternalEntry,
    OperationType,
    WalkResult,
    hookimpl,
)
from nyla.testing.scripted import ScriptedProvider

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
        release = os.environ.get("NYLA_E2E_RELEASE")
        while release and not Path(release).exists():
            await asyncio.sleep(0.05)
        results = []
        for ds in data_sources:
            # a stored override wins over the caller's limit (seeds: getStoredOverrides)
            stored = (ds.get("settings") or {}).get("ragLimits") or {}
            max_items = stored.get("maxItems", (limits or {}).get("max_items", 1000))
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


class ServedPlugin(MemoryPlugin):
    """What the served process of the end-to-end tests registers: the connector, its walker
    and the ``e2e:hash`` embedding model."""

    def __init__(self) -> None:
        super().__init__()
        self.provider = ScriptedProvider(
            lambda request, index: "unused",
            id="e2e",
            model="hash",
            operations=[OperationType.NEUTRALIZATION_TEXT],
            embed_fn=hash_embed,
        )

    @hookimpl
    def nyla_providers(self) -> list[Any]:
        return [self.provider]
