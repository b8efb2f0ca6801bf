"""The local files ``nyla knowledge index`` reads: found as the walk goes, in path order.

A bulk load of local folders must not hold its file list: 50,000 paths waiting as names were
~6 MiB of the run's peak, and the sorted list of every entry as ``Path`` objects that the
listing built first about three times that. The walk holds one folder's names at a time (per
level of the folder it is in), and the total a progress bar needs is a walk of its own that
keeps nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from nyla.knowledge.extract import detect_kind


def iter_paths(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Files under ``paths`` (directories recursively, hidden entries, unsupported types and
    links to directories skipped; a link to a file counts), each directory's entries by name:
    the order of sorting all the paths, without holding them. A missing path raises
    :class:`FileNotFoundError` when the walk reaches it; a directory that cannot be read is
    passed over."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from _walk(path)
        elif path.is_file():
            yield path
        else:
            raise FileNotFoundError(f"no such file or directory: {path}")


def count_paths(paths: Iterable[str | Path]) -> int:
    """How many files :func:`iter_paths` finds (a walk that keeps none of them)."""
    return sum(1 for _ in iter_paths(paths))


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Every file :func:`iter_paths` finds, as a list (for a caller that needs them all)."""
    return list(iter_paths(paths))


def _walk(top: Path) -> Iterator[Path]:
    names: list[str] = []
    folders: set[str] = set()
    try:
        with os.scandir(top) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        folders.add(entry.name)
                    elif entry.is_file() and detect_kind(entry.name) is not None:
                        pass
                    else:
                        continue
                except OSError:
                    continue  # gone or unreadable since the folder was read
                names.append(entry.name)
    except PermissionError:
        return
    # one name after the other in sorted order: a folder's files come where its path sorts
    for name in sorted(names):
        if name in folders:
            yield from _walk(top / name)
        else:
            yield top / name
