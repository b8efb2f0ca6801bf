"""Folders of the file store: list, create, rename, move and delete, each checked against the
caller's scope (:mod:`nyla.files.scope`). :class:`~nyla.files.store.FileStore` builds on it."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from nyla.errors import FileAccessError, FolderNotEmptyError
from nyla.files.names import clean_name
from nyla.files.scope import owner_ids, readable
from nyla.files.tables import FileRow, FolderRow
from nyla.models.agent import RunContext
from nyla.models.files import FolderInfo, FolderRemoval, Scope

if TYPE_CHECKING:
    from nyla.db import Database


def folder_info(row: FolderRow) -> FolderInfo:
    """A folder row as the store gives it out."""
    return FolderInfo(id=row.id, name=row.name, parent_id=row.parent_id, scope=Scope(row.scope))


def folder_name(name: str) -> str:
    """``name`` cleaned as file names are (:func:`~nyla.files.names.clean_name`), or
    ``ValueError`` when it is empty, too long or holds a ``/``."""
    if isinstance(name, str) and "/" in name:
        raise ValueError("a folder name must be non-empty and without '/'")
    return clean_name(name, "folder")


class FolderStore:
    """Scoped folders (seeds: the workspace folder tools); the base of ``kernel.files``."""

    #: the database the folders live in (the file store sets it)
    db: Database

    async def _check_folder(
        self, s: AsyncSession, folder_id: str | None, context: RunContext
    ) -> None:
        """A folder given as a target must exist and be readable (``None``: the root)."""
        if folder_id is not None:
            await self._folder(s, folder_id, context)

    async def list_folders(
        self, context: RunContext, parent_id: str | None = None, *, all_levels: bool = False
    ) -> list[FolderInfo]:
        """Readable folders directly under ``parent_id`` (root when ``None``), or all."""
        query = select(FolderRow).where(readable(FolderRow, context))
        if not all_levels:
            query = query.where(
                FolderRow.parent_id.is_(None)
                if parent_id is None
                else FolderRow.parent_id == parent_id
            )
        async with self.db.session() as s:
            rows = (await s.scalars(query.order_by(FolderRow.name))).all()
        return [folder_info(r) for r in rows]

    async def create_folder(
        self,
        name: str,
        context: RunContext,
        *,
        parent_id: str | None = None,
        scope: Scope = Scope.PERSONAL,
    ) -> FolderInfo:
        """A new folder (under a readable parent)."""
        name = folder_name(name)
        async with self.db.session() as s:
            await self._check_folder(s, parent_id, context)
            row = FolderRow(
                id=str(uuid.uuid4()),
                name=name,
                parent_id=parent_id,
                **owner_ids(context, Scope(scope)),
            )
            s.add(row)
            await s.flush()
            return folder_info(row)

    async def _folder(self, s: AsyncSession, folder_id: str, context: RunContext) -> FolderRow:
        row = await s.scalar(
            select(FolderRow).where(FolderRow.id == folder_id, readable(FolderRow, context))
        )
        if row is None:
            raise FileAccessError(f"folder {folder_id!r} not found")
        return row

    async def _subtree(self, s: AsyncSession, folder_id: str) -> list[str]:
        ids, frontier = [folder_id], [folder_id]
        while frontier:
            children = (
                await s.scalars(select(FolderRow.id).where(FolderRow.parent_id.in_(frontier)))
            ).all()
            frontier = [c for c in children if c not in ids]
            ids.extend(frontier)
        return ids

    async def delete_folder(
        self, folder_id: str, context: RunContext, *, recursive: bool = False
    ) -> FolderRemoval:
        """Delete a folder; with ``recursive`` its subfolders and files too (all or nothing)."""
        async with self.db.session() as s:
            await self._folder(s, folder_id, context)
            ids = await self._subtree(s, folder_id)
            files = await s.scalar(select(func.count()).where(FileRow.folder_id.in_(ids)))
            if not recursive and (len(ids) > 1 or files):
                raise FolderNotEmptyError(
                    f"folder {folder_id!r} is not empty ({files} files, {len(ids) - 1} "
                    "subfolders); pass recursive=true to delete everything in it"
                )
            await s.execute(delete(FileRow).where(FileRow.folder_id.in_(ids)))
            await s.execute(delete(FolderRow).where(FolderRow.id.in_(ids)))
            return FolderRemoval(folders=len(ids), files=int(files or 0))

    async def rename_folder(self, folder_id: str, name: str, context: RunContext) -> FolderInfo:
        """Rename a readable folder."""
        name = folder_name(name)
        async with self.db.session() as s:
            row = await self._folder(s, folder_id, context)
            row.name = name
            return folder_info(row)

    async def move_folder(
        self, folder_id: str, parent_id: str | None, context: RunContext
    ) -> FolderInfo:
        """Move a folder under another (``None`` = root); never into itself or a descendant."""
        async with self.db.session() as s:
            row = await self._folder(s, folder_id, context)
            if parent_id is not None:
                await self._folder(s, parent_id, context)
                if parent_id in await self._subtree(s, folder_id):
                    raise ValueError("a folder cannot be moved into itself or its subfolders")
            row.parent_id = parent_id
            return folder_info(row)
