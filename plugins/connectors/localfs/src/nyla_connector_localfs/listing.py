"""The listing of a local folder for a sync: every file in path order, a page at a time,
and every folder (or entry) that could not be read reported as
:class:`~nyla.sdk.connectors.Unlisted` instead of passed over in silence — the walker then
deletes nothing below it. A file or folder that vanished while the listing ran is simply
not listed: it no longer exists.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nyla.sdk import clean_text
from nyla.sdk.connectors import Item, SyncPage, Unlisted

#: makes the item of a file from its path and the stat the walk took
ItemOf = Callable[[Path, os.stat_result], Item]


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


class Walk:
    """One walk below ``root``; ``unlisted`` collects what could not be read."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.unlisted: list[Unlisted] = []

    def _unreadable(self, path: str, exc: OSError) -> None:
        rel = Path(path).relative_to(self.root).as_posix()
        shown = "" if rel == "." else "/" + clean_text(rel)
        self.unlisted.append(Unlisted(path=shown, reason=_reason(exc)))

    def files(self, top: Path) -> Iterator[tuple[Path, os.stat_result]]:
        """Every file below ``top`` with its stat, in path order (hidden entries and
        symlinks left out)."""
        try:
            entries = sorted(os.scandir(top), key=lambda e: e.name)
        except FileNotFoundError:
            return  # removed while the walk ran: nothing below it exists
        except OSError as exc:
            self._unreadable(str(top), exc)
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir():
                    yield from self.files(Path(entry.path))
                    continue
                if not entry.is_file():
                    continue
                stat = entry.stat()
            except FileNotFoundError:
                continue  # deleted since its folder was read
            except OSError as exc:
                self._unreadable(entry.path, exc)
                continue
            yield Path(entry.path), stat


def sync_pages(
    root: Path, top: Path, after: tuple[str, ...] | None, page_size: int, item_of: ItemOf,
    checkpoint_of: Callable[[str | None], dict[str, Any]],
) -> Iterator[SyncPage]:  # fmt: skip
    """The pages of a full listing of ``top``, resuming after the relative path ``after``
    (as parts); each page carries what could not be read since the previous one, and the
    checkpoint ``checkpoint_of`` makes of the last relative path listed (``None``: done)."""
    walk = Walk(root)
    batch: list[Item] = []
    reported = 0
    for path, stat in walk.files(top):
        rel = path.relative_to(root).as_posix()
        if after and tuple(rel.split("/")) <= after:  # the walk's own order
            continue
        batch.append(item_of(path, stat))
        if len(batch) == page_size:
            unlisted, reported = walk.unlisted[reported:], len(walk.unlisted)
            yield SyncPage(
                items=batch,
                unlisted=unlisted,
                checkpoint=checkpoint_of(rel),
                full_listing=True,
            )
            batch = []
    yield SyncPage(
        items=batch,
        unlisted=walk.unlisted[reported:],
        checkpoint=checkpoint_of(None),
        done=True,
        full_listing=True,
    )


def walk_files(top: Path) -> Iterator[Path]:
    """Every readable file below ``top`` in path order (for search: what cannot be read
    is not found)."""
    return (path for path, _ in Walk(top).files(top))
