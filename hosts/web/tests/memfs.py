"""An in-memory connector (service ``memfs``), its walker and a hashing embedder: the data
side of the host's tests. Also loaded by the served process of the end-to-end tests
(``nyla serve --plugin memfs:ServedPlugin``); there ``NYLA_E2E_RELEASE`` names a file a sync
waits for before its first page, so a test sees the running job first."""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import re
from pathlib import Path
from typing import Any

from nyla import OperationType, hookimpl
from nyla.sdk.connectors import BaseConnector, Download, Item, ItemPage, SyncPage
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


class MemoryConnector(BaseConnector):
    """A connector over the in-memory :data:`FILES` (service ``memfs``). ``gate`` (tests) or
    the file ``NYLA_E2E_RELEASE`` names (end-to-end) holds a sync before its first page."""

    service = "memfs"
    label = "In-memory files"
    auth_modes = ("none",)

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None

    def _item(self, path: str) -> Item:
        return Item(
            id=path,
            title=path.rsplit("/", 1)[-1],
            path=path,
            size=len(FILES[path]),
            mime="text/plain",
            version=str(len(FILES[path])),
        )

    async def browse(self, ctx, path: str = "", cursor: str | None = None) -> ItemPage:
        """The folders and files directly below ``path``."""
        prefix = (path or "/").rstrip("/") + "/"
        folders, files = set(), []
        for p in FILES:
            if p.startswith(prefix):
                head, _, rest = p[len(prefix) :].partition("/")
                if rest:
                    folders.add(prefix + head)
                else:
                    files.append(self._item(p))
        dirs = [Item(id=f, title=f.rsplit("/", 1)[-1], path=f, kind="folder") for f in folders]
        return ItemPage(items=sorted(dirs, key=lambda i: i.path) + files)

    def _walk(self, scope: str) -> list[Item]:
        prefix = (scope or "/").rstrip("/") + "/"
        return [self._item(p) for p in FILES if p.startswith(prefix)]

    async def download(self, ctx, item_id: str, max_bytes: int | None = None) -> Download:
        return Download(item=self._item(item_id), content=FILES[item_id], mime="text/plain")

    async def sync(self, ctx, scope: str, checkpoint: dict[str, Any] | None):
        if self.gate is not None:
            await self.gate.wait()
        release = os.environ.get("NYLA_E2E_RELEASE")
        while release and not Path(release).exists():
            await asyncio.sleep(0.05)
        items = self._walk(scope)
        yield SyncPage(items=items, checkpoint={"seen": len(items)}, done=True, full_listing=True)


class MemoryWalker:
    """The walker of ``memfs``: every text file."""

    id = "memfs-walker"
    services = ["memfs"]
    limit_kind = "files"

    def accepts(self, item: Item) -> bool:
        return item.mime == "text/plain"


class MemoryPlugin:
    """Contributes the connector and its walker."""

    def __init__(self) -> None:
        self.connector = MemoryConnector()
        self.walker = MemoryWalker()

    @hookimpl
    def nyla_connectors(self) -> list[Any]:
        return [self.connector]

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
