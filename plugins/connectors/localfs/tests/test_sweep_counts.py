"""The sweep after a complete listing reads only what the listing did not see, yet measures
the shrink against every item the source knows: deleting a few files sweeps them, deleting
most of them refuses the sweep and names both counts."""

from __future__ import annotations

import shutil
from pathlib import Path

from localfs_helpers import local_source, make_kernel, make_tree


async def test_a_small_shrink_is_swept_and_a_large_one_refused(db, tmp_path: Path) -> None:
    kernel = make_kernel(db)
    make_tree(tmp_path, 40, per_folder=10)
    ds = await local_source(kernel, tmp_path)
    first = await kernel.sync.runner.sync(ds)
    assert first.items_indexed == 40, first
    for _ in range(3):
        next((tmp_path / "folder-000").glob("*.txt")).unlink()
    second = await kernel.sync.runner.sync(ds)
    assert (second.sweep, second.items_deleted) == ("complete: 3 deleted", 3), second
    for folder in ("folder-001", "folder-002", "folder-003"):
        shutil.rmtree(tmp_path / folder)
    third = await kernel.sync.runner.sync(ds)
    assert third.sweep.startswith("refused: the listing shrank from 37 to 7 items"), third
    assert third.items_deleted == 0
