"""Where each drive item sits, from ids alone.

Graph's delta responses never carry ``parentReference.path`` ("track items by id", Remarks
of driveitem-delta): every item names only its parent's id. The tree keeps every folder's
parent id and name — in the sync's checkpoint, updated by every delta page — and answers an
item's path from them, so a renamed or moved folder changes the path of everything below it
at once. A parent the tree has not met yet (Graph does not promise parents first) is fetched
by id, up to the root.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from nyla.sdk.connectors import ConnectorContext
from nyla_connector_msft.paths import seg

#: folders deeper than this are a cycle or a broken answer, not a drive
MAX_DEPTH = 256


class Folder(BaseModel):
    """One folder of the drive: its parent's id and its name (``package``: a OneNote
    notebook, whose insides are not files)."""

    parent: str | None = None
    name: str = ""
    package: bool = False


class DriveTree(BaseModel):
    """The folders of one drive by id, and the root's id."""

    root: str | None = None
    folders: dict[str, Folder] = Field(default_factory=dict)

    def observe(self, raw: dict[str, Any]) -> bool:
        """Take a folder (or package) of a delta page; ``True`` when it was known before
        under another parent or name (a move or a rename its descendants follow)."""
        if "root" in raw:
            self.root = str(raw["id"])
            return False
        parent = (raw.get("parentReference") or {}).get("id")
        folder = Folder(
            parent=str(parent) if parent else None,
            name=str(raw.get("name") or raw["id"]),
            package="package" in raw,
        )
        before = self.folders.get(str(raw["id"]))
        self.folders[str(raw["id"])] = folder
        return before is not None and (before.parent, before.name) != (folder.parent, folder.name)

    def forget(self, folder_id: str) -> bool:
        """Drop a deleted folder; ``True`` when it was known."""
        return self.folders.pop(folder_id, None) is not None

    def folder_path(self, folder_id: str | None) -> str | None:
        """``/A/B`` of a folder below the root (``""`` for the root); ``None`` while an
        ancestor is unknown."""
        names: list[str] = []
        current = folder_id
        for _ in range(MAX_DEPTH):
            if current is None or current == self.root:
                return "".join(f"/{n}" for n in reversed(names))
            folder = self.folders.get(current)
            if folder is None:
                return None
            names.append(folder.name)
            current = folder.parent
        return None

    def unknown_ancestor(self, folder_id: str | None) -> str | None:
        """The first folder above (or at) ``folder_id`` the tree has not met."""
        current = folder_id
        for _ in range(MAX_DEPTH):
            if current is None or current == self.root:
                return None
            folder = self.folders.get(current)
            if folder is None:
                return current
            current = folder.parent
        return None

    def in_package(self, folder_id: str | None) -> bool:
        """Whether ``folder_id`` is a OneNote package or inside one."""
        current = folder_id
        for _ in range(MAX_DEPTH):
            folder = self.folders.get(current) if current else None
            if folder is None:
                return False
            if folder.package:
                return True
            current = folder.parent
        return False

    async def resolve(self, ctx: ConnectorContext, drive: str, folder_id: str | None) -> None:
        """Fetch the ancestors of ``folder_id`` the tree has not met, by id."""
        for _ in range(MAX_DEPTH):
            missing = self.unknown_ancestor(folder_id)
            if missing is None:
                return
            raw = await ctx.http.get_json(
                f"/drives/{seg(drive, 'drive id')}/items/{seg(missing)}",
                params={"$select": "id,name,parentReference,root,folder,package"},
            )
            self.observe(raw)
            if "root" in raw:
                return


def parent_of(raw: dict[str, Any]) -> str | None:
    """The parent id of a driveItem (``None`` for the root)."""
    parent = (raw.get("parentReference") or {}).get("id")
    return str(parent) if parent else None


def is_folder(raw: dict[str, Any]) -> bool:
    """Whether a driveItem holds others (a folder, or a OneNote package)."""
    return "folder" in raw or "package" in raw or "root" in raw
