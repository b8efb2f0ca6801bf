"""A kernel over the localfs plugin with a deterministic embedder, for tests and the child
process of the recovery test."""

from __future__ import annotations

import hashlib
import math
import re
import time
from pathlib import Path
from typing import Any

import nyla_connector_localfs.plugin as localfs
from nyla.testing import plugin_kernel
from nyla.testing.scripted import ScriptedProvider

KEY = "l0sBMcsTOy0SxvUT1YjMWWUOWSPJtKgTQ5tXKNMu9Gk="
DIMS = 32


def embed(texts: list[str], delay: float = 0.0) -> list[list[float]]:
    """Bag-of-words hashing vectors (texts sharing words are close)."""
    if delay:
        time.sleep(delay)
    out = []
    for text in texts:
        vec = [0.0] * DIMS
        for word in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            vec[h % DIMS] += 1.0 if (h >> 32) & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        out.append([v / norm for v in vec] if any(vec) else [1.0 / math.sqrt(DIMS)] * DIMS)
    return out


def make_kernel(db: Any, delay: float = 0.0) -> Any:
    """A kernel with the localfs plugin and a scripted embedding model."""
    provider = ScriptedProvider(lambda request, index: "ok", embed_fn=lambda t: embed(t, delay))
    return plugin_kernel(
        localfs, provider, db=db, names=["localfs", "scripted"], settings={"secret_key": KEY}
    )


def make_tree(root: Path, count: int, per_folder: int = 50) -> None:
    """``count`` small text files in folders of ``per_folder``."""
    for i in range(count):
        folder = root / f"folder-{i // per_folder:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{i:05d}.txt").write_text(
            f"Note {i} about subject{i} and the weekly plan.\n"
        )


async def local_source(kernel: Any, root: Path, user: str = "u1") -> str:
    """A localfs connection on ``root`` with indexing on; returns the data source id."""
    conn = await kernel.connections.add("localfs", user_id=user, settings={"root": str(root)})
    ds_id = f"ds-{conn.id}"
    await kernel.knowledge.governance.add_data_source(
        ds_id, conn.id, "/", user_id=user, rag_index_enabled=True
    )
    return ds_id
