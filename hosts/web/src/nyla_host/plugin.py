"""The host's plugin object (entry point ``nyla.hosts: web``): adds ``nyla serve``,
``nyla tokens`` and ``nyla teams`` to the ``nyla`` command."""

from __future__ import annotations

from typing import Any

from nyla import hookimpl


@hookimpl
def nyla_cli_commands(cli: Any) -> None:
    """``nyla serve``, ``nyla tokens``, ``nyla teams`` and ``nyla mcp serve`` (into the
    ``mcp`` group the MCP toolbox plugin may have added, else a new one)."""
    import click

    from nyla_host.cli import mcp_serve, serve, tokens
    from nyla_host.teams_cli import teams

    cli.add_command(serve)
    cli.add_command(tokens)
    cli.add_command(teams)
    group = cli.commands.get("mcp")
    if not isinstance(group, click.Group):
        group = click.Group("mcp", help="nyla and the Model Context Protocol.")
        cli.add_command(group)
    group.add_command(mcp_serve)
