"""Output helpers shared by the CLI: rich tables for people, JSON for programs."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click


def emit_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout."""
    click.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a table (rich) on stdout; cell text is literal (rich markup is escaped)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=title, show_lines=False, header_style="bold")
    for col in columns:
        t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(*["" if v is None else escape(str(v)) for v in row])
    Console(file=sys.stdout, width=None if sys.stdout.isatty() else 160).print(t)


def json_option(fn: Any) -> Any:
    """The ``--json`` flag every inspector command takes."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(
        fn
    )


def run_async(coro: Any) -> Any:
    """Run a coroutine from a click command."""
    import asyncio

    return asyncio.run(coro)
