"""``nyla db info|start|stop``: the database."""

from __future__ import annotations

import click

from nyla.commands.output import emit_json, json_option, run_async, table


@click.group()
def db() -> None:
    """The database: embedded PostgreSQL + pgvector by default, NYLA_DATABASE_URL otherwise."""


@db.command()
@json_option
def info(as_json: bool) -> None:
    """URL (password masked), server version, pgvector version, tables."""
    from nyla.db import Database
    from nyla.errors import NylaError

    async def go() -> dict:
        database = Database()
        try:
            return await database.info()
        finally:
            await database.dispose()

    try:
        data = run_async(go())
    except NylaError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        emit_json(data)
        return
    rows = [(k, data[k]) for k in ("url", "embedded", "serverVersion", "pgvectorVersion", "schema")]
    rows.append(("tables", ", ".join(data["tables"]) or "-"))
    table("database", ["field", "value"], rows)


@db.command()
def start() -> None:
    """Start the embedded server (it then keeps running for later processes)."""
    from nyla.db import start_embedded, to_sqlalchemy_url
    from nyla.errors import NylaError

    try:
        server = start_embedded()
    except NylaError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"embedded PostgreSQL running: {to_sqlalchemy_url(server.get_uri())}")


@db.command()
def stop() -> None:
    """Stop the embedded server cleanly."""
    from nyla.db import stop_embedded

    click.echo("stopped" if stop_embedded() else "not running")
