"""The file store (``kernel.files``): files and folders in the database, every read and write
checked against the caller's scope (:mod:`nyla.files.scope`).

``get`` answers ``None`` both for a missing file and for one the context may not read, so a
caller cannot probe other users' ids. Saving an identical file (same name, content hash,
owner and scope) returns the existing one — but only when the caller can actually read it
(the ghost-duplicate fix of seed 003): identical files in two scopes are two files.
"""

from __future__ import annotations

import builtins  # `list` inside FileStore is its method: annotations there say builtins.list
import hashlib
import logging
import mimetypes
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from nyla.errors import FileAccessError
from nyla.files.folders import FolderStore
from nyla.files.names import clean_mime, clean_name
from nyla.files.scope import owner_ids, readable
from nyla.files.tables import FileRow
from nyla.models.agent import RunContext
from nyla.models.files import ContentHit, FileItem, Scope

if TYPE_CHECKING:
    from nyla.db import Database

log = logging.getLogger(__name__)

WriteMode = Literal["create", "append", "overwrite"]


def content_hash(content: bytes) -> str:
    """SHA-256 hex digest of ``content``."""
    return hashlib.sha256(content).hexdigest()


def guess_mime(name: str) -> str:
    """The mime type of a file name (``text/plain`` for unknown text-like names)."""
    mime, _ = mimetypes.guess_type(name)
    if mime:
        return mime
    if name.rsplit(".", 1)[-1].lower() in ("md", "txt", "csv", "log", "yaml", "yml", "toml"):
        return "text/plain"
    return "application/octet-stream"


def to_item(row: FileRow) -> FileItem:
    """The wire model of a file row."""
    return FileItem(
        id=row.id,
        name=row.name,
        mime_type=row.mime_type,
        size=row.size,
        content_hash=row.content_hash,
        folder_id=row.folder_id,
        tags=list(row.tags or []),
        scope=Scope(row.scope),
        user_id=row.user_id,
        mandate_id=row.mandate_id,
        feature_instance_id=row.feature_instance_id,
        neutralize=row.neutralize,
        data_source_id=row.data_source_id,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


class FileStore(FolderStore):
    """Scoped files and folders in ``db`` (seeds: FileItem, workspace file/folder tools)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def workflows(self) -> Any:
        """The chat workflows files are bound to (:class:`nyla.files.bridge.WorkflowStore`)."""
        from nyla.files.bridge import WorkflowStore

        if "_workflows" not in self.__dict__:
            self.__dict__["_workflows"] = WorkflowStore(self)
        return self.__dict__["_workflows"]

    # ---- files --------------------------------------------------------------------------

    async def _row(self, s: AsyncSession, file_id: str, context: RunContext) -> FileRow | None:
        return await s.scalar(
            select(FileRow).where(FileRow.id == file_id, readable(FileRow, context))
        )

    async def _required(self, s: AsyncSession, file_id: str, context: RunContext) -> FileRow:
        row = await self._row(s, file_id, context)
        if row is None:
            raise FileAccessError(f"file {file_id!r} not found")
        return row

    async def find_duplicate(
        self, name: str, digest: str, context: RunContext, scope: Scope = Scope.PERSONAL
    ) -> FileItem | None:
        """An identical file the caller can read, or ``None``.

        Candidates match by name, hash, creator and scope regardless of visibility; each is
        then cross-checked with :meth:`get`, so a file of another feature instance or mandate
        (a ghost) never counts as a duplicate.
        """
        async with self.db.session() as s:
            candidates = (
                await s.scalars(
                    select(FileRow.id).where(
                        FileRow.name == name,
                        FileRow.content_hash == digest,
                        FileRow.user_id == context.user_id,
                        FileRow.scope == scope.value,
                    )
                )
            ).all()
        for file_id in candidates:
            item = await self.get(file_id, context)
            if item is not None:
                return item
        return None

    async def save(
        self,
        name: str,
        content: bytes,
        context: RunContext,
        *,
        mime_type: str | None = None,
        folder_id: str | None = None,
        tags: Iterable[str] | None = None,
        scope: Scope = Scope.PERSONAL,
        neutralize: bool = False,
        data_source_id: str | None = None,
        dedupe: bool = True,
    ) -> FileItem:
        """Store a new file (or return the identical one the caller already has). The name
        is cleaned by :func:`~nyla.files.names.clean_name` (``ValueError`` when empty or too
        long); a mime type that is not plain ``type/subtype`` is guessed from the name."""
        name = clean_name(name)
        if isinstance(content, str):
            content = content.encode()
        digest = content_hash(content)
        scope = Scope(scope)
        if dedupe:
            existing = await self.find_duplicate(name, digest, context, scope)
            if existing is not None and existing.folder_id == folder_id:
                log.info("duplicate of %s for user %s: reusing it", existing.id, context.user_id)
                return existing
        async with self.db.session() as s:
            await self._check_folder(s, folder_id, context)
            row = FileRow(
                id=str(uuid.uuid4()),
                name=name,
                mime_type=clean_mime(mime_type) or guess_mime(name),
                size=len(content),
                content_hash=digest,
                content=content,
                folder_id=folder_id,
                tags=sorted(set(tags or [])),
                neutralize=neutralize,
                data_source_id=data_source_id,
                **owner_ids(context, scope),
            )
            s.add(row)
            await s.flush()
            await s.refresh(row)
            return to_item(row)

    async def get(self, file_id: str, context: RunContext) -> FileItem | None:
        """The file's metadata, or ``None`` when missing or not readable by ``context``."""
        async with self.db.session() as s:
            row = await self._row(s, file_id, context)
            return to_item(row) if row is not None else None

    async def read_bytes(self, file_id: str, context: RunContext) -> bytes:
        """The file's content (raises :class:`FileAccessError` when not readable)."""
        async with self.db.session() as s:
            content = await s.scalar(
                select(FileRow.content).where(FileRow.id == file_id, readable(FileRow, context))
            )
        if content is None:
            raise FileAccessError(f"file {file_id!r} not found")
        return bytes(content)

    async def read_text(self, file_id: str, context: RunContext) -> str:
        """The file's content decoded as UTF-8 (undecodable bytes replaced)."""
        return (await self.read_bytes(file_id, context)).decode("utf-8", errors="replace")

    async def list(
        self,
        context: RunContext,
        folder_id: str | None = None,
        tags: Iterable[str] | None = None,
        search: str | None = None,
        *,
        limit: int = 500,
    ) -> list[FileItem]:
        """Readable files, optionally in one folder, with all ``tags``, whose name contains
        ``search`` (case-insensitive); newest first."""
        query = select(FileRow).where(readable(FileRow, context))
        if folder_id is not None:
            query = query.where(FileRow.folder_id == folder_id)
        if search:
            query = query.where(FileRow.name.ilike(f"%{_escape_like(search)}%", escape="\\"))
        query = query.order_by(FileRow.created_at.desc(), FileRow.name).limit(limit)
        async with self.db.session() as s:
            rows = (await s.scalars(query)).all()
        wanted = set(tags or [])
        return [to_item(r) for r in rows if wanted <= set(r.tags or [])]

    async def search_content(
        self,
        context: RunContext,
        query: str,
        *,
        folder_id: str | None = None,
        file_ids: Iterable[str] | None = None,
        max_hits: int = 50,
    ) -> builtins.list[ContentHit]:
        """Lines of readable text files containing ``query`` (case-insensitive)."""
        needle = query.lower()
        stmt = select(FileRow).where(readable(FileRow, context))
        if folder_id is not None:
            stmt = stmt.where(FileRow.folder_id == folder_id)
        ids = list(file_ids or [])
        if ids:
            stmt = stmt.where(FileRow.id.in_(ids))
        hits: builtins.list[ContentHit] = []
        async with self.db.session() as s:
            for row in (await s.scalars(stmt.order_by(FileRow.name))).all():
                try:
                    text = bytes(row.content).decode("utf-8")
                except UnicodeDecodeError:
                    continue  # binary files have no lines to search
                for number, line in enumerate(text.splitlines(), 1):
                    if needle in line.lower():
                        hits.append(
                            ContentHit(file_id=row.id, name=row.name, line=number, text=line)
                        )
                        if len(hits) >= max_hits:
                            return hits
        return hits

    async def write(
        self, file_id: str, content: bytes, context: RunContext, *, mode: WriteMode = "overwrite"
    ) -> FileItem:
        """Overwrite or append to a readable file."""
        if isinstance(content, str):
            content = content.encode()
        async with self.db.session() as s:
            row = await self._required(s, file_id, context)
            new = bytes(row.content) + content if mode == "append" else content
            row.content = new
            row.size = len(new)
            row.content_hash = content_hash(new)
            row.updated_at = func.now()
            await s.flush()
            await s.refresh(row)
            return to_item(row)

    async def replace(
        self, file_id: str, old: str, new: str, context: RunContext, *, count: int | None = None
    ) -> tuple[FileItem, int]:
        """Replace ``old`` by ``new`` in a text file; returns the file and the replacements."""
        if not old:
            raise ValueError("the text to replace must not be empty")
        async with self.db.session() as s:
            row = await self._required(s, file_id, context)
            text = bytes(row.content).decode("utf-8", errors="replace")
            found = text.count(old)
            n = found if count is None else min(found, count)
            if n:
                updated = text.replace(old, new, n).encode()
                row.content = updated
                row.size = len(updated)
                row.content_hash = content_hash(updated)
                row.updated_at = func.now()
            await s.flush()
            await s.refresh(row)
            return to_item(row), n

    async def update(
        self,
        file_id: str,
        context: RunContext,
        *,
        name: str | None = None,
        folder_id: str | Literal["keep"] | None = "keep",
        tags: Iterable[str] | None = None,
    ) -> FileItem:
        """Rename, move (``folder_id=None`` = root) or retag a readable file."""
        async with self.db.session() as s:
            row = await self._required(s, file_id, context)
            if name is not None:
                row.name = clean_name(name)
            if folder_id != "keep":
                await self._check_folder(s, folder_id, context)
                row.folder_id = folder_id
            if tags is not None:
                row.tags = sorted(set(tags))
            row.updated_at = func.now()
            await s.flush()
            await s.refresh(row)
            return to_item(row)

    async def copy(
        self,
        file_id: str,
        context: RunContext,
        *,
        name: str | None = None,
        folder_id: str | Literal["keep"] | None = "keep",
    ) -> FileItem:
        """An independent copy of a readable file, owned by the caller in the same scope."""
        async with self.db.session() as s:
            src = await self._required(s, file_id, context)
            target_folder = src.folder_id if folder_id == "keep" else folder_id
            await self._check_folder(s, target_folder, context)
            row = FileRow(
                id=str(uuid.uuid4()),
                name=clean_name(name or f"Copy of {src.name}"),
                mime_type=src.mime_type,
                size=src.size,
                content_hash=src.content_hash,
                content=bytes(src.content),
                folder_id=target_folder,
                tags=list(src.tags or []),
                neutralize=src.neutralize,
                data_source_id=src.data_source_id,
                **owner_ids(context, Scope(src.scope)),
            )
            s.add(row)
            await s.flush()
            await s.refresh(row)
            return to_item(row)

    async def delete(self, file_id: str, context: RunContext) -> bool:
        """Delete a readable file; False when there is none."""
        async with self.db.session() as s:
            row = await self._row(s, file_id, context)
            if row is None:
                return False
            await s.delete(row)
            return True


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
