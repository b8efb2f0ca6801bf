"""Sync throughput of the walker runner on a local tree vs the raw indexing path.

    .venv/bin/python bench/sync.py [--files 10000]

Builds a tree of small text files, then on a throwaway embedded PostgreSQL (offline local
embedder ``local:hash-384``): indexes it with ``knowledge.index_paths`` (the raw path), syncs
it through the localfs connector and walker (one transaction per 100-file page), syncs again
unchanged, cancels a sync after a third of its pages and resumes it. Prints items/s and
chunks/s for each.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any


def make_tree(root: Path, count: int) -> None:
    for i in range(count):
        folder = root / f"folder-{i // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{i:05d}.txt").write_text(
            f"Note {i}: meeting about project{i % 97} with customer{i % 31}; budget {i * 7} CHF, "
            f"next steps for week {i % 52}.\n"
        )


async def run(files: int) -> None:
    from nyla.db import Database, start_embedded, to_sqlalchemy_url
    from nyla.jobs.runtime import JobHandle
    from nyla.kernel import Kernel
    from nyla.models.agent import RunContext

    base = Path(tempfile.mkdtemp(prefix="nyla-bench-sync-"))
    server = start_embedded(base, cleanup_mode="delete")
    url = to_sqlalchemy_url(server.get_uri())
    tree = base / "tree"
    make_tree(tree, files)
    settings = {"knowledge": {"embedding_model": "local:hash-384"}, "secret_key": _key()}
    try:
        raw = Kernel(db=Database(url, schema="raw"), settings=settings)
        started = time.perf_counter()
        results = await raw.knowledge.indexing.index_paths([tree], context=RunContext(user_id="u1"))
        report("raw index_paths", len(results), sum(r.chunks for r in results), started)
        await raw.aclose()

        kernel = Kernel(db=Database(url, schema="walk"), settings=settings)
        conn = await kernel.connections.add("localfs", user_id="u1", settings={"root": str(tree)})
        await kernel.knowledge.governance.add_data_source(
            "ds", conn.id, "/", user_id="u1", rag_index_enabled=True
        )
        limits = {"max_items": files * 2, "max_bytes": 1 << 40}
        started = time.perf_counter()
        _, first = await kernel.sync.run("ds", user_id="u1", limits=limits)
        report("sync (walker)", first.items_indexed, first.chunks_written, started)
        started = time.perf_counter()
        _, again = await kernel.sync.run("ds", user_id="u1", limits=limits)
        report("re-sync, unchanged", again.items_unchanged, again.chunks_written, started)
        await resume(kernel, conn.id, files, limits, JobHandle)
        await kernel.aclose()
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


async def resume(
    kernel: Any, connection_id: str, files: int, limits: dict, handle_type: Any
) -> None:
    """Cancel a fresh sync after a third of its pages, then resume it."""
    stop_after = max(1, files // 100 // 3)

    class StopAfter(handle_type):
        pages = 0

        async def progress(self, done: int, total: int | None = None, message: str = "") -> None:
            await super().progress(done, total, message)
            StopAfter.pages += 1
            if StopAfter.pages >= stop_after:
                await self.store.cancel(self.id)
                self._cancel_checked = float("-inf")

    from nyla.knowledge.consent import set_knowledge_consent

    async with kernel.db.session() as s:  # start over: purge what the first syncs indexed
        await set_knowledge_consent(s, connection_id, False, actor="u1")
    async with kernel.db.session() as s:
        await set_knowledge_consent(s, connection_id, True, actor="u1")

    async def job(handle: Any) -> Any:
        return await kernel.sync.runner.sync(
            "ds", StopAfter(handle.store, handle.id), limits=limits
        )

    started = time.perf_counter()
    _, cut = await kernel.jobs.run("sync", job, user_id="u1", data_source_id="ds")
    report(
        f"sync cancelled after {stop_after} pages", cut.items_indexed, cut.chunks_written, started
    )
    started = time.perf_counter()
    _, rest = await kernel.sync.run("ds", user_id="u1", limits=limits)
    report("resumed sync", rest.items_indexed, rest.chunks_written, started)
    print(f"  resumed run saw {rest.items_seen} items (of {files}); "
          f"indexed before + after = {cut.items_indexed + rest.items_indexed}")  # fmt: skip


def report(label: str, items: int, chunks: int, started: float) -> None:
    seconds = time.perf_counter() - started
    print(f"{label:32s} {items:6d} items {chunks:6d} chunks in {seconds:7.1f} s: "
          f"{items / seconds:7.1f} items/s {chunks / seconds:7.1f} chunks/s")  # fmt: skip


def _key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    asyncio.run(run(parser.parse_args().files))
