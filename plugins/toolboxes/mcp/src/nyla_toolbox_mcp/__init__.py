"""nyla-toolbox-mcp: every MCP server a user configured (``nyla mcp add``) as the toolbox
``mcp:<name>``, each call behind nyla's tool gate (see docs/mcp.md)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from nyla.sdk import SettingsSection, Toolbox, hookimpl
from nyla_toolbox_mcp.servers import ServerStore
from nyla_toolbox_mcp.tools import server_toolbox

if TYPE_CHECKING:
    import click

log = logging.getLogger(__name__)

__all__ = ["mcp_toolboxes", "nyla_cli_commands", "nyla_settings_sections", "nyla_toolboxes"]


def mcp_toolboxes(store: ServerStore | None = None) -> list[Toolbox]:
    """One toolbox per configured server name (from the first user, then mandate, that has
    it; a call runs on the run user's own server of that name, else their mandate's, and is
    refused for a user with neither)."""
    store = store or ServerStore()
    seen: dict[str, Toolbox] = {}
    for owners in (store, store.mandates()):
        for owner in owners.users():
            try:
                servers = owners.servers(owner)
            except Exception as exc:  # one unreadable file must not take the others' toolboxes
                log.warning("MCP servers of %s not loaded: %s: %s", owner, type(exc).__name__, exc)
                continue
            for server in servers:
                seen.setdefault(server.name, server_toolbox(server, store))
    return list(seen.values())


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The configured MCP servers' toolboxes."""
    return mcp_toolboxes()


@hookimpl
def nyla_settings_sections() -> list[SettingsSection]:
    """The MCP servers as a section of the host's settings (a user's, a mandate's)."""
    from nyla_toolbox_mcp.settings import McpSettings

    return [McpSettings()]


@hookimpl
def nyla_cli_commands(cli: click.Group) -> None:
    """``nyla mcp add/list/remove/login/logout`` (into the ``mcp`` group the host may have added)."""
    import click

    from nyla_toolbox_mcp import cli_oauth  # noqa: F401  (adds login/logout to the group)
    from nyla_toolbox_mcp.cli import mcp_group

    group = cli.commands.get("mcp")
    if not isinstance(group, click.Group):
        cli.add_command(mcp_group)
        return
    for command in mcp_group.commands.values():
        group.add_command(command)
