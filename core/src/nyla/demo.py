"""`make demo`: start the embedded database, show the installed plugins and what they
contribute, then run each area's offline demo (knowledge store, feature data agent, agent).

    python -m nyla.demo
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

DEMO_SCHEMA = "nyla_demo"

# (title, "module:function"): each is `async def run_demo(kernel, console) -> None`.
DEMO_STEPS: tuple[tuple[str, str], ...] = (
    ("Knowledge store: index and search offline", "nyla.knowledge.demo:run_demo"),
    ("Feature data agent: the trustee benchmark with a scripted policy", "nyla.eval.demo:run_demo"),
    ("Agent run: tools, events and trace", "nyla.agent.demo:run_demo"),
    ("Your own data: a local folder connected, searched, synced", "nyla.walkers.demo:run_demo"),
)


def _plugins_table(host: Any) -> Table:
    t = Table(title="installed plugins", header_style="bold")
    for col in ("name", "distribution", "group", "status", "contributes"):
        t.add_column(col, overflow="fold")
    for r in sorted(host.records.values(), key=lambda r: (r.group, r.name)):
        contributes = "; ".join(
            f"{k}: {', '.join(v[:6])}{' …' if len(v) > 6 else ''}"
            for k, v in sorted(r.contributes.items())
            if v
        )
        t.add_row(
            r.name,
            f"{r.distribution} {r.version or ''}",
            r.group,
            r.status if r.status == "ok" else escape(f"{r.status}: {r.error}"),
            contributes or "-",
        )
    return t


def _models_table(host: Any) -> Table:
    t = Table(title="models", header_style="bold")
    for col in ("id", "operations", "CHF in/out per 1M", "available"):
        t.add_column(col, overflow="fold")
    for m in sorted(host.models(), key=lambda m: m.id):
        price = (
            f"{m.price_input_chf_per_mtok:g} / {m.price_output_chf_per_mtok:g}"
            if m.price_input_chf_per_mtok is not None and m.price_output_chf_per_mtok is not None
            else "?"
        )
        t.add_row(
            m.id,
            ", ".join(str(o) for o in m.operation_types),
            price,
            "yes" if m.available else escape(f"no: {m.unavailable_reason}"),
        )
    return t


def _load_step(target: str) -> Callable[[Any, Console], Awaitable[None]] | None:
    module, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return None
        raise


async def main() -> None:
    """Run the demo end to end."""

    from nyla.db import Database
    from nyla.kernel import Kernel

    console = Console(width=None if sys.stdout.isatty() else 140)
    console.print(Panel.fit("[bold]nyla[/bold] — a plugin-driven AI agent framework", style="cyan"))

    started = time.perf_counter()
    with console.status("starting the embedded PostgreSQL + pgvector…"):
        # The demo's files, runs and traces live in a schema of their own, so the user's
        # own store (and their later searches) never see them.
        kernel = Kernel(db=Database(schema=DEMO_SCHEMA))
        info = await kernel.db.info()
    console.print(
        f"database: PostgreSQL {info['serverVersion']}, pgvector {info['pgvectorVersion']} "
        f"at {info['url']} ({time.perf_counter() - started:.1f} s), "
        f"{len(info['tables'])} tables in the demo's own schema {DEMO_SCHEMA!r} "
        "(your own store is not touched)"
    )

    host = kernel.plugins
    console.print(_plugins_table(host))
    console.print(_models_table(host))
    if host.failures:
        console.print(
            f"[red]{len(host.failures)} plugin(s) failed to load[/red] (see `nyla plugins list`)"
        )

    for title, target in DEMO_STEPS:
        step = _load_step(target)
        if step is None:
            continue
        console.rule(title)
        try:
            await step(kernel, console)
        except Exception as exc:  # one demo step failing must not hide the others
            console.print(f"[red]{title} failed: {type(exc).__name__}: {exc}[/red]")
            raise

    console.rule("where to go next")
    console.print(
        "  nyla plugins list | show NAME | check     the plugin inspector (--json everywhere)\n"
        "  nyla models list --operation agent        models and whether they are configured\n"
        "  nyla tools list                           the tools an agent can call\n"
        '  nyla knowledge search "QUERY"             semantic search over what was indexed\n'
        '  nyla run "PROMPT"                         run the agent (set a provider key first)\n'
        "  nyla connections add localfs --setting root=DIR   connect a folder; then\n"
        "  nyla sync run CONNECTION_ID               sync it into the knowledge store\n"
        "  nyla db info | stop                       the embedded database\n"
        "  docs/: writing-a-plugin.md, hooks.md, configuration.md"
    )
    await kernel.aclose()


def cli_main() -> None:
    """``python -m nyla.demo``: a failure the user can act on ends in one line, exit 1."""
    from nyla.cli import debug_enabled, user_error

    try:
        asyncio.run(main())
    except Exception as exc:
        message = user_error(exc)
        if message is None or debug_enabled():
            raise
        print(f"Error: {message[0]}: {message[1]}", file=sys.stderr)
        raise SystemExit(1) from None


if __name__ == "__main__":
    cli_main()
