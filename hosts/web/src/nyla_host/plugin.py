"""The host's plugin object (entry point ``nyla.hosts: web``): adds ``nyla serve`` and
``nyla tokens`` to the ``nyla`` command."""

from __future__ import annotations

from typing import Any

from nyla import hookimpl


@hookimpl
def nyla_cli_commands(cli: Any) -> None:
    """``nyla serve`` and ``nyla tokens``."""
    from nyla_host.cli import serve, tokens

    cli.add_command(serve)
    cli.add_command(tokens)
