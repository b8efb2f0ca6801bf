"""What the file store needs of its host, as a protocol: the kernel satisfies it, and the
store imports it instead of the kernel, so the kernel can build the store without a circle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from nyla.db import Database


class FilesHost(Protocol):
    """The host of the file store (the kernel): the database the files live in."""

    @property
    def db(self) -> Database: ...
