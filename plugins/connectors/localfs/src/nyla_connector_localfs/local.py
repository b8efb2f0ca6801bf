"""A folder on this machine as a data source (service ``localfs``).

The connection's setting ``root`` names the folder; item ids are paths relative to it
(``reports/q3.txt``; a path that is not valid UTF-8 as its bytes, see :func:`item_id`), and
nothing outside it is ever read or written. Every sync is a full
listing in path order, a page per ``PAGE_SIZE`` files; its checkpoint is the last path of a
page, so an interrupted sync resumes after it. Deletions are found by the walker's sweep.
"""

from __future__ import annotations

import asyncio
import base64
import mimetypes
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nyla.sdk import clean_text, has_unstorable_chars
from nyla.sdk.connectors import (
    BaseConnector,
    Checkpoint,
    ConnectorContext,
    ConnectorError,
    ConnectorSettings,
    Download,
    Item,
    ItemPage,
    ItemTooLargeError,
    SyncPage,
    UnsafePathError,
    VendorBadRequestError,
    VendorForbiddenError,
    VendorNotFoundError,
    confine_path,
    safe_segment,
    setting,
)
from nyla_connector_localfs.listing import sync_pages, walk_files

PAGE_SIZE = 100
BROWSE_PAGE = 200
#: text files up to this size are searched by content too (names always)
SEARCH_TEXT_BYTES = 512 * 1024
TEXT_SUFFIXES = {".txt", ".md", ".csv", ".json", ".html", ".htm", ".xml", ".yaml", ".yml"}


class LocalFolderSettings(ConnectorSettings):
    """A local folder connection: the folder on the server's disk."""

    root: str = setting(
        kind="folder",
        label="Folder",
        help="the folder on the server to connect (an absolute path)",
        server_only=True,
        min_length=1,
    )


def _root(ctx: ConnectorContext) -> Path:
    root = ctx.connection.settings.get("root")
    if not root:
        raise VendorBadRequestError(
            "localfs: the connection has no 'root' folder", service="localfs"
        )
    path = Path(root).expanduser().resolve()
    if not path.is_dir():
        raise VendorNotFoundError(f"localfs: {path} is not a folder", service="localfs")
    return path


#: an item id that carries a path's bytes (base64url) because the path is not valid UTF-8
BYTES_ID = "~bytes:"


def item_id(rel: str) -> str:
    """The item id of the relative path ``rel``: the path itself, or, when it holds bytes
    that are not UTF-8 (POSIX names may; Python shows them as surrogate escapes, which no
    database or JSON can take), :data:`BYTES_ID` and the path's bytes in base64url, which
    :func:`path_of` turns back into the same path."""
    if not has_unstorable_chars(rel):
        return rel
    return BYTES_ID + base64.urlsafe_b64encode(os.fsencode(rel)).decode("ascii")


def path_of(item_id_or_path: str) -> str:
    """The relative path an item id (or a plain path) names."""
    if item_id_or_path.startswith(BYTES_ID):
        try:
            raw = base64.urlsafe_b64decode(item_id_or_path[len(BYTES_ID) :].encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            raise VendorNotFoundError(
                f"localfs: {item_id_or_path!r} is not an item id", service="localfs"
            ) from None
        return os.fsdecode(raw)
    return item_id_or_path


def _inside(root: Path, relative: str) -> Path:
    """The absolute path of ``relative`` (a path or an item id) below ``root``: normalised
    and confined by the SDK (``..``, NUL, encoded and look-alike separators refused), then
    resolved, so a symlink that leads out of the folder is refused too."""
    clean = confine_path("", path_of(relative), service="localfs")
    target = (root / clean).resolve()
    if not _within(root, target):
        raise UnsafePathError(f"localfs: {relative!r} leads outside the folder", service="localfs")
    return target


def _within(root: Path, resolved: Path) -> bool:
    return resolved == root or root in resolved.parents


def _listable(root: Path, entry: Path) -> bool:
    """Whether a folder entry is shown: not hidden, and not a symlink that dangles or
    leads out of the folder (its target's name, size and dates are not the user's to see)."""
    if entry.name.startswith("."):
        return False
    if not entry.is_symlink():
        return True
    try:
        return _within(root, entry.resolve(strict=True))
    except (OSError, RuntimeError):  # dangling, or a symlink loop
        return False


def _write_new(target: Path, content: bytes) -> None:
    """Write ``content`` to ``target`` without following a symlink put there since the
    check (``O_NOFOLLOW``)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags, 0o644)
    except OSError as exc:
        raise UnsafePathError(
            f"localfs: cannot write {target.name!r} ({exc.strerror})", service="localfs"
        ) from exc
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)


def _item(root: Path, path: Path, stat: os.stat_result | None = None) -> Item:
    stat = stat or path.stat()
    rel = path.relative_to(root).as_posix()
    folder = path.is_dir()
    return Item(
        id=item_id(rel) or ".",
        title=clean_text(path.name or root.name),
        kind="folder" if folder else "file",
        path="/" + clean_text(rel),
        url=path.as_uri(),
        modified=datetime.fromtimestamp(stat.st_mtime, UTC),
        size=None if folder else stat.st_size,
        mime=None if folder else (mimetypes.guess_type(path.name)[0] or "application/octet-stream"),
        version=f"{stat.st_mtime_ns}-{stat.st_size}",
        depth=len(Path(rel).parts),
    )


class LocalFolder(BaseConnector):
    """A local folder: search (names, and text of small text files), browse, download,
    upload, sync."""

    service = "localfs"
    label = "Local folder"
    query_syntax = (
        "words that must all appear in a file's path or (for small text files) its text; "
        "case does not matter"
    )
    auth_modes = ("none",)
    settings = LocalFolderSettings

    async def search(
        self, ctx: ConnectorContext, query: str, scope: str = "", cursor: str | None = None
    ) -> ItemPage:
        root = _root(ctx)
        words = [w.lower() for w in query.split()]
        start = int(cursor or 0)
        hits = await asyncio.to_thread(self._matches, root, _inside(root, scope), words)
        page = hits[start : start + BROWSE_PAGE // 4]
        more = start + len(page) < len(hits)
        return ItemPage(items=page, cursor=str(start + len(page)) if more else None)

    @staticmethod
    def _matches(root: Path, top: Path, words: list[str]) -> list[Item]:
        found = []
        for path in walk_files(top):
            haystack = path.relative_to(root).as_posix().lower()
            if (
                not all(w in haystack for w in words)
                and path.suffix.lower() in TEXT_SUFFIXES
                and path.stat().st_size <= SEARCH_TEXT_BYTES
            ):
                haystack += " " + path.read_text("utf-8", errors="ignore").lower()
            if all(w in haystack for w in words):
                found.append(_item(root, path))
        return found

    async def browse(
        self, ctx: ConnectorContext, path: str = "", cursor: str | None = None
    ) -> ItemPage:
        root = _root(ctx)
        folder = _inside(root, path)
        if not folder.is_dir():
            raise VendorNotFoundError(f"localfs: no folder {path!r}", service=self.service)
        entries = sorted(p for p in folder.iterdir() if _listable(root, p))
        start = int(cursor or 0)
        page = entries[start : start + BROWSE_PAGE]
        more = start + len(page) < len(entries)
        return ItemPage(
            items=[_item(root, p) for p in page], cursor=str(start + len(page)) if more else None
        )

    async def item(self, ctx: ConnectorContext, item_id: str) -> Item:
        root = _root(ctx)
        path = _inside(root, item_id)
        try:
            return _item(root, path)
        except OSError as exc:  # gone since it was listed, or not ours to read
            raise _unreadable(item_id, exc) from exc

    async def download(
        self, ctx: ConnectorContext, item_id: str, max_bytes: int | None = None
    ) -> Download:
        meta = await self.item(ctx, item_id)
        if meta.is_folder:
            raise VendorBadRequestError(f"localfs: {item_id!r} is a folder", service=self.service)
        if max_bytes is not None and (meta.size or 0) > max_bytes:
            raise ItemTooLargeError(
                f"localfs: {item_id} has {meta.size} bytes, more than {max_bytes}",
                size=meta.size,
                limit=max_bytes,
            )
        try:
            data = await asyncio.to_thread(_inside(_root(ctx), item_id).read_bytes)
        except OSError as exc:
            raise _unreadable(item_id, exc) from exc
        return Download(item=meta, content=data, mime=meta.mime or "application/octet-stream")

    async def upload(
        self, ctx: ConnectorContext, path: str, name: str, content: bytes, mime: str
    ) -> Item:
        root = _root(ctx)
        name = safe_segment(name, what="file name", service=self.service)
        folder = _inside(root, path)
        folder.mkdir(parents=True, exist_ok=True)
        target = _inside(root, f"{folder.relative_to(root).as_posix()}/{name}")
        await asyncio.to_thread(_write_new, target, content)
        return _item(root, target)

    async def sync(
        self, ctx: ConnectorContext, scope: str, checkpoint: dict[str, Any] | None
    ) -> AsyncIterator[SyncPage]:
        root = _root(ctx)
        top = _inside(root, scope)
        where = top.relative_to(root).as_posix()
        cp = LocalCheckpoint.load(checkpoint, scope=where)
        pages = sync_pages(
            root,
            top,
            _resume_after(cp.after),
            PAGE_SIZE,
            lambda path, stat: _item(root, path, stat),
            lambda rel: LocalCheckpoint(after=rel and item_id(rel), scope=where).dump(),
        )
        # the walk reads the disk: a page at a time in a worker thread, off the event loop
        while (page := await asyncio.to_thread(next, pages, None)) is not None:
            yield page


class LocalCheckpoint(Checkpoint):
    """Where a listing of a folder resumes: after the item id of the last file listed
    (``None``: from the start); every run is a full listing."""

    after: str | None = None


def _resume_after(after: str | None) -> tuple[str, ...] | None:
    """The relative path (as parts) a listing resumes after; an id that names no path (a
    broken checkpoint) starts from the beginning."""
    if not after:
        return None
    try:
        return tuple(path_of(after).split("/"))
    except VendorNotFoundError:
        return None


def _unreadable(item_id: str, exc: OSError) -> ConnectorError:
    """The typed error of a file that vanished or cannot be read (it fails alone)."""
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return VendorNotFoundError(f"localfs: no item {item_id!r}", service="localfs")
    message = f"localfs: {item_id!r}: {exc.strerror or type(exc).__name__}"
    if isinstance(exc, PermissionError):
        return VendorForbiddenError(message, service="localfs")
    return ConnectorError(message, service="localfs")
