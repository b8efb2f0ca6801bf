"""Contracts of the file store: scopes and the FileItem as tools and the knowledge store see it."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from nyla.models.base import WireModel


class Scope(StrEnum):
    """Who may read a file or chunk (seeds: ``scope``)."""

    PERSONAL = "personal"
    FEATURE_INSTANCE = "featureInstance"
    MANDATE = "mandate"
    GLOBAL = "global"


class FileItem(WireModel):
    """A stored file's metadata. The FileItem is the single source of truth for its scope:
    ``scope`` plus the owner ids (``user_id``, ``mandate_id``, ``feature_instance_id``).
    ``neutralize`` asks for data-at-rest neutralization when it is indexed."""

    id: str
    name: str
    mime_type: str = "application/octet-stream"
    size: int = 0
    content_hash: str = ""
    folder_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    scope: Scope = Scope.PERSONAL
    user_id: str = "local"
    mandate_id: str | None = None
    feature_instance_id: str | None = None
    neutralize: bool = False
    data_source_id: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class FolderInfo(WireModel):
    """A folder of the file store (``parentId`` ``None``: at the root)."""

    id: str
    name: str
    parent_id: str | None = None
    scope: Scope = Scope.PERSONAL


class FolderRemoval(WireModel):
    """What deleting a folder removed: the folder with its subfolders, and their files."""

    folders: int
    files: int


class ContentHit(WireModel):
    """A line of a readable text file that holds the searched text (``line`` counts from 1)."""

    file_id: str
    name: str
    line: int
    text: str
