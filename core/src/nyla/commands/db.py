"""``nyla db info|start|stop``: the database."""

from __future__ import annotations

import os
from typing import Any

import click

from nyla.commands.output import emit_json, json_option, run_async, table


@click.group()
def db() -> None:
    """The database: embedded PostgreSQL + pgvector by default, NYLA_DATABASE_URL otherwise."""


def embedded_status() -> dict[str, Any]:
    """The embedded server's installation, recorded owner and whether it belongs to this
    installation (empty when ``NYLA_DATABASE_URL`` points elsewhere)."""
    if os.environ.get("NYLA_DATABASE_URL"):
        return {}
    from nyla.embedded import default_data_dir, installation, read_owner, stale_reason

    inst = installation()
    data_dir = default_data_dir()
    owner = read_owner(data_dir) or {}
    return {
        "dataDir": str(data_dir),
        "binary": str(inst.binary),
        "ownedByThisInstallation": owner.get("binary") == str(inst.binary)
        and stale_reason(data_dir, inst) is None,
        "canary": owner.get("canary", "not run"),
    }


@db.command()
@json_option
def info(as_json: bool) -> None:
    """URL (password masked), versions, binary, ownership, self-check, tables."""
    from nyla.db import Database
    from nyla.identity import default_user

    async def go() -> dict:
        database = Database()
        try:
            return await database.info()
        finally:
            await database.dispose()

    data = run_async(go())
    data.update(embedded_status())
    data["defaultUser"] = default_user()
    if as_json:
        emit_json(data)
        return
    fields = (
        "url",
        "embedded",
        "serverVersion",
        "pgvectorVersion",
        "binary",
        "ownedByThisInstallation",
        "canary",
        "dataDir",
        "schema",
        "defaultUser",
    )
    rows = [(k, data[k]) for k in fields if k in data]
    rows.append(("tables", ", ".join(data["tables"]) or "-"))
    table("database", ["field", "value"], rows)


@db.command()
def start() -> None:
    """Start the embedded server (it then keeps running for later processes)."""
    from nyla.db import mask_url, to_sqlalchemy_url
    from nyla.embedded import start_embedded

    server = start_embedded()
    click.echo(f"embedded PostgreSQL running: {mask_url(to_sqlalchemy_url(server.get_uri()))}")


@db.command()
def stop() -> None:
    """Stop the embedded server cleanly."""
    from nyla.embedded import stop_embedded

    click.echo("stopped" if stop_embedded() else "not running")
