"""nyla-toolbox-mcp: every MCP server a user configured (``nyla mcp add``) as the toolbox
``mcp:<name>``, each call behind nyla's tool gate (see docs/mcp.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nyla.sdk import RunContext, SettingsSection, Toolbox, hookimpl

if TYPE_CHECKING:
    import click

    from nyla_toolbox_mcp.servers import ServerStore

__all__ = ["mcp_toolboxes", "nyla_cli_commands", "nyla_settings_sections", "nyla_toolboxes"]


async def mcp_toolboxes(store: ServerStore, context: RunContext) -> list[Toolbox]:
    """The toolboxes a run of ``context`` gets from the servers in ``store`` (one per name:
    the run user's own server, else their mandate's; a call checks again which it runs on)."""
    # here, not at the top: discovering plugins (``nyla --help``) imports no database layer
    from nyla_toolbox_mcp.tools import server_toolbox

    servers = await store.for_run(context.user_id or "", context.mandate_id)
    return [server_toolbox(server, store) for server in servers]


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The MCP servers' toolboxes, resolved when each run starts (see :mod:`.run_toolboxes`)."""
    from nyla_toolbox_mcp.run_toolboxes import McpToolboxes

    return [McpToolboxes(id="mcp", label="MCP servers")]


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
