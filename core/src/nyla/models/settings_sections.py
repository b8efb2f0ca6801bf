"""A settings section a plugin contributes (``nyla_settings_sections``): named entries a user
keeps for themselves, or a mandate admin for every user of the mandate, which a host lists,
adds and removes (``/api/settings/sections`` on ``nyla serve``; the host checks who may)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal

#: whose entries: one user's own, or a mandate's (for all its users)
SettingsScope = Literal["user", "mandate"]


class SettingsSection(ABC):
    """One section: ``id`` (unique, in URLs), ``label`` (shown), and its entries per owner
    (a user id for ``user``, a mandate id for ``mandate``). Entries are JSON objects with a
    ``name``; what is secret in them (tokens, keys) is never in what :meth:`entries` or
    :meth:`add` answer. A bad entry is a ``ValueError`` with the reason, nothing stored."""

    id: str = ""
    label: str = ""

    @abstractmethod
    async def entries(self, scope: SettingsScope, owner: str) -> list[dict[str, Any]]:
        """The owner's entries."""

    @abstractmethod
    async def add(self, scope: SettingsScope, owner: str, body: dict[str, Any]) -> dict[str, Any]:
        """Add (or replace) the entry ``body`` describes; the stored entry."""

    @abstractmethod
    async def remove(self, scope: SettingsScope, owner: str, name: str) -> bool:
        """Remove the entry ``name``; whether there was one."""
