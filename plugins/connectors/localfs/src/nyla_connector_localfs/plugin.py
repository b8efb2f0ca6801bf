"""Entry point of ``nyla-connector-localfs``: the local-folder and WebDAV connectors and the
walker that syncs both into the knowledge store."""

from __future__ import annotations

from typing import Any

from nyla.sdk import hookimpl
from nyla.sdk.connectors import BaseWalker, Item
from nyla_connector_localfs.local import LocalFolder
from nyla_connector_localfs.webdav import WebDav


class FilesWalker(BaseWalker):
    """Syncs local folders and WebDAV shares: every file (folders are only walked through)."""

    id = "localfs"
    services = ["localfs", "webdav"]
    limit_kind = "files"

    def accepts(self, item: Item) -> bool:
        """Files only; hidden files (``.name``) stay out."""
        return not item.is_folder and not item.title.startswith(".")


@hookimpl
def nyla_connectors() -> list[Any]:
    return [LocalFolder(), WebDav()]


@hookimpl
def nyla_walkers() -> list[Any]:
    return [FilesWalker()]
