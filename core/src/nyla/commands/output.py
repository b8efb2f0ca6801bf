"""Output helpers shared by the CLI: rich tables for people, JSON for programs."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from typing import Any

import click


def json_safe(data: Any) -> Any:
    """``data`` with every float JSON cannot hold (NaN, ±inf) as ``null``."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [json_safe(v) for v in data]
    return data


def safe_text(text: str) -> str:
    """``text`` printable as UTF-8 (a lone surrogate from a model becomes ``\\udxxx``)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def json_line(data: Any, *, indent: int | None = None) -> str:
    """``data`` as always valid JSON text: no NaN, no lone surrogates."""
    text = json.dumps(
        json_safe(data), indent=indent, default=str, ensure_ascii=False, allow_nan=False
    )
    return safe_text(text)


def emit_json(data: Any) -> None:
    """Print ``data`` as indented, always valid JSON on stdout."""
    click.echo(json_line(data, indent=2))


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a table (rich) on stdout; cell text is literal (rich markup is escaped)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=title, show_lines=False, header_style="bold")
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    for i, col in enumerate(columns):
        if col == "id" or col.endswith(" id"):
            # Ids are copied into the next command: never wrapped or cut.
            widest = max([len(col), *(len(r[i]) for r in cells if i < len(r))])
            t.add_column(col, no_wrap=True, min_width=widest)
        else:
            t.add_column(col, overflow="fold")
    for row in cells:
        t.add_row(*[escape(v) for v in row])
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


def progress_bar(title: str, detail: str, *, quiet: bool = False) -> Any:
    """A rich progress bar on stderr (stdout stays for tables and JSON): ``title`` in bold,
    the bar, done/total, ``detail`` (a format over ``task.fields``) and the elapsed time;
    ``quiet`` hides it (``--json``)."""
    if quiet:
        # no bar, and no rich imported for it (~2 MiB of every `--json` indexing run's peak)
        return _NoProgress()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn(f"[bold]{title}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(detail),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=quiet,
    )


class _NoProgress:
    """What :func:`progress_bar` returns when quiet: takes the calls a bar takes, shows nothing."""

    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, **fields: Any) -> int:
        return 0

    def update(self, task: int, **fields: Any) -> None:
        return None

    def advance(self, task: int, advance: float = 1) -> None:
        return None
