"""The MCP servers as a settings section of the host (``nyla_settings_sections``): a user's
own servers, or a mandate's for all its users, listed, added (connecting once to list the
tools, as ``nyla mcp add`` does) and removed; header and env values are never answered."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from nyla.sdk import SettingsScope, SettingsSection
from nyla_toolbox_mcp.servers import McpServer, ServerStore

#: the fields of an entry a host may send (the listing is taken from the server)
FIELDS = {
    "name": "name",
    "command": "command",
    "args": "args",
    "env": "env",
    "url": "url",
    "headers": "headers",
    "timeoutS": "timeout_s",
    "startTimeoutS": "start_timeout_s",
}


class McpSettings(SettingsSection):
    """``mcp``: the MCP servers of a user or a mandate."""

    id = "mcp"
    label = "MCP servers"

    def __init__(self, store: ServerStore | None = None) -> None:
        self._store = store

    def _owners(self, scope: SettingsScope) -> ServerStore:
        store = self._store or ServerStore()
        return store.mandates() if scope == "mandate" else store

    async def entries(self, scope: SettingsScope, owner: str) -> list[dict[str, Any]]:
        return [s.public() for s in self._owners(scope).servers(owner)]

    async def add(self, scope: SettingsScope, owner: str, body: dict[str, Any]) -> dict[str, Any]:
        from nyla_toolbox_mcp.cli import add_server

        unknown = sorted(set(body) - set(FIELDS))
        if unknown:
            raise ValueError(f"unknown fields: {', '.join(unknown)}")
        values = {FIELDS[k]: v for k, v in body.items()}
        if bool(values.get("command")) == bool(values.get("url")):
            raise ValueError("give either command (stdio) or url (streamable HTTP)")
        values["transport"] = "stdio" if values.get("command") else "http"
        try:
            server = McpServer.model_validate(values)
        except ValidationError as exc:
            raise ValueError("; ".join(e["msg"] for e in exc.errors())) from None
        try:
            stored = await add_server(self._owners(scope), owner, server)
        except Exception as exc:  # nothing is stored when the server cannot be listed
            raise ValueError(
                f"could not list the tools of {server.name!r}: {type(exc).__name__}"
            ) from None
        return stored.public()

    async def remove(self, scope: SettingsScope, owner: str, name: str) -> bool:
        return self._owners(scope).remove(owner, name)
