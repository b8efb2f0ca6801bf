"""``nyla connections list|add|remove|test`` and ``nyla sync run|status|stop``: thin
commands over ``kernel.connections`` and ``kernel.sync``."""

from __future__ import annotations

import sys
import uuid
from typing import TYPE_CHECKING, Any

import click

from nyla.commands.output import emit_json, json_option, run_async, table
from nyla.knowledge.cli import user_option

if TYPE_CHECKING:
    from nyla.kernel import Kernel


def _kernel() -> Any:
    from nyla.kernel import Kernel

    return Kernel()


@click.group()
def connections() -> None:
    """Connections to external services (tokens stored encrypted)."""


@connections.command("list")
@user_option
@json_option
def list_connections(user: str, as_json: bool) -> None:
    """The user's connections."""

    async def main() -> list[Any]:
        kernel = _kernel()
        try:
            return await kernel.connections.list(user)
        finally:
            await kernel.aclose()

    rows = run_async(main())
    if as_json:
        emit_json([r.to_wire() for r in rows])
        return
    table(
        "connections",
        ["id", "service", "label", "account", "status", "indexing consent"],
        [
            (r.id, r.service, r.label, r.account, r.status, r.knowledge_ingestion_enabled)
            for r in rows
        ],
    )


def _settings(pairs: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r}: use key=value", param_hint="--setting")
        out[key] = value
    return out


@connections.command("add")
@click.argument("service")
@click.option("--setting", "settings", multiple=True, help="key=value (e.g. root=/data/docs).")
@click.option("--label", default="", help="A name for the connection.")
@click.option("--account", default="", help="The account (e-mail, user name).")
@click.option(
    "--token-stdin", is_flag=True, help="Read an access token (or user:password) from stdin."
)
@click.option("--device-code", is_flag=True, help="Sign in with the service's device code.")
@user_option
@json_option
def add_connection(
    service: str, settings: tuple[str, ...], label: str, account: str, token_stdin: bool,
    device_code: bool, user: str, as_json: bool,
) -> None:  # fmt: skip
    """Connect SERVICE (see `nyla plugins list` for installed connectors): the settings are
    checked against the connector's, and the connection is saved only when its root can be
    listed."""
    from nyla.access.permissions import Subject, connector_permission
    from nyla.models.datasource import TokenGrant

    async def main() -> Any:
        kernel = _kernel()
        try:
            await kernel.service_access.check(Subject(user), connector_permission(service))
            grant = None
            if token_stdin:
                grant = TokenGrant(access_token=sys.stdin.readline().strip())
            elif device_code:
                grant = await _device_code(kernel, service, _settings(settings))
            # the operator at the machine may set server-only settings (a folder, a URL)
            return await kernel.connections.connect(
                service, user_id=user, account=account, label=label, grant=grant,
                settings=_settings(settings), operator=True,
            )  # fmt: skip
        finally:
            await kernel.aclose()

    conn = run_async(main())
    if as_json:
        emit_json(conn.to_wire())
    else:
        click.echo(f"connected {conn.service} as {conn.id}")


async def _device_code(kernel: Kernel, service: str, settings: dict[str, Any]) -> Any:
    from nyla.connections.oauth import device_code_flow

    adapter = kernel.connections.adapter(service)
    oauth_for = getattr(adapter, "oauth_for", None)
    oauth = oauth_for(settings) if oauth_for is not None else getattr(adapter, "oauth", None)
    if oauth is None:
        raise click.UsageError(f"{service} has no OAuth sign-in; use --token-stdin")

    def show(url: str, code: str, message: str) -> None:
        click.echo(message or f"Open {url} and enter the code {code}")

    async with kernel.connections.plain_http(service) as http:
        return await device_code_flow(http, oauth, service=service, show=show)


@connections.command("remove")
@click.argument("connection_id")
@user_option
@json_option
def remove_connection(connection_id: str, user: str, as_json: bool) -> None:
    """Remove a connection with everything indexed from it."""

    async def main() -> Any:
        kernel = _kernel()
        try:
            return await kernel.connections.remove(connection_id, user_id=user)
        finally:
            await kernel.aclose()

    result = run_async(main())
    if as_json:
        emit_json(result.to_wire())
    else:
        click.echo(f"removed {connection_id}: {result.files} files, {result.chunks} chunks purged")


@connections.command("test")
@click.argument("connection_id")
@user_option
@json_option
def test_connection(connection_id: str, user: str, as_json: bool) -> None:
    """Call the service once with the connection's token."""

    async def main() -> Any:
        kernel = _kernel()
        try:
            return await kernel.connections.test(connection_id, user_id=user)
        finally:
            await kernel.aclose()

    result = run_async(main())
    data = {"ok": result.ok, "message": result.message, "seconds": round(result.seconds, 3),
            "status": result.status}  # fmt: skip
    if as_json:
        emit_json(data)
    else:
        click.echo(f"{'ok' if result.ok else 'FAILED'} in {result.seconds:.2f} s: {result.message}")
    if not result.ok:
        raise SystemExit(1)


@click.group()
def sync() -> None:
    """Sync connected folders into the knowledge store (walkers)."""


async def _data_source(kernel: Kernel, target: str, path: str, user: str) -> str:
    """``target`` as a data source id, or a connection whose data source at ``path`` is used
    (created with indexing on when missing: asking for a sync is the consent)."""
    from nyla.knowledge.sources import get_data_source, list_data_sources

    if await get_data_source(kernel.db, target) is not None:
        return target
    await kernel.connections.get(target, user_id=user)
    for source in await list_data_sources(kernel.db, target):
        if source.path.rstrip("/") == path.rstrip("/"):
            if not source.rag_index_effective:
                await kernel.knowledge.governance.set_rag_index_enabled(source.id, True, actor=user)
            return source.id
    ds_id = f"ds-{uuid.uuid4().hex[:12]}"
    await kernel.knowledge.governance.add_data_source(
        ds_id, target, path, user_id=user, rag_index_enabled=True
    )
    click.echo(f"indexing switched on for {path} of {target} (data source {ds_id})", err=True)
    return ds_id


@sync.command("run")
@click.argument("target")
@click.option("--path", default="/", show_default=True, help="Folder of the connection.")
@click.option("--max-items", type=int, default=None, help="Stop after this many items.")
@user_option
@json_option
def sync_run(target: str, path: str, max_items: int | None, user: str, as_json: bool) -> None:
    """Sync TARGET (a data source id, or a connection id with --path) now."""
    from nyla.access.permissions import Subject
    from nyla.walkers.progress import progress_bar

    limits = {"max_items": max_items} if max_items else None

    async def main() -> Any:
        kernel = _kernel()
        try:  # a sync fills the knowledge store: the user must be allowed to use it
            await kernel.service_access.check(Subject(user), "service.knowledge")
            ds_id = await _data_source(kernel, target, path, user)
            await kernel.jobs.store.recover_interrupted()
            with progress_bar(enabled=not as_json) as on_progress:
                return await kernel.sync.run(
                    ds_id, user_id=user, limits=limits, on_progress=on_progress
                )
        finally:
            await kernel.aclose()

    job_id, result = run_async(main())
    data = {"jobId": job_id, **result.model_dump(mode="json", by_alias=True, exclude={"skipped"})}
    if as_json:
        emit_json(data)
        return
    table(
        f"sync {result.data_source_id}",
        ["pages", "seen", "indexed", "unchanged", "skipped", "failed", "deleted", "chunks", "sweep"],
        [(result.pages, result.items_seen, result.items_indexed, result.items_unchanged,
          result.items_skipped, result.items_failed, result.items_deleted, result.chunks_written,
          result.sweep)],
    )  # fmt: skip
    if result.stopped_at_limit:
        click.echo("stopped at a limit (see `nyla sync status`)")
    if result.joined:
        click.echo("this data source was already syncing here: joined that sync")
    elif result.waited_s:
        click.echo(f"waited {result.waited_s:.0f} s for another sync of this data source")
    for part in result.unlisted:
        click.echo(f"could not list {part.path or '/'}: {part.reason} (nothing below it deleted)")


@sync.command("status")
@user_option
@json_option
def sync_status(user: str, as_json: bool) -> None:
    """Per data source: indexing, last sync, limit stops, running job."""

    async def main() -> list[dict[str, Any]]:
        kernel = _kernel()
        try:
            return await kernel.sync.status(user_id=user)
        finally:
            await kernel.aclose()

    rows = run_async(main())
    if as_json:
        emit_json(rows)
        return
    table(
        "data sources",
        ["data source", "connection", "path", "indexing", "indexed", "limit stop", "running"],
        [(r["dataSourceId"], r["connectionId"], r["path"], r["ragIndexEnabled"],
          r["lastResult"].get("itemsIndexed", "-"), r["stoppedAtLimit"] or "",
          _running_cell(r["running"])) for r in rows],
    )  # fmt: skip


def _running_cell(running: dict[str, Any] | None) -> str:
    """A running job's id, with its status when that is not plain ``running``."""
    if not running:
        return ""
    status = running.get("status", "running")
    return running["jobId"] if status == "running" else f"{running['jobId']} ({status})"


@sync.command("stop")
@click.option("--data-source", "data_source_id", default=None, help="Stop syncs of this one.")
@click.option("--connection", "connection_id", default=None, help="Stop every sync of it.")
@user_option
@json_option
def sync_stop(
    data_source_id: str | None, connection_id: str | None, user: str, as_json: bool
) -> None:
    """Cancel running syncs (they stop at their next item)."""
    if not data_source_id and not connection_id:
        raise click.UsageError("name --data-source or --connection")

    async def main() -> int:
        kernel = _kernel()
        try:
            return await kernel.sync.stop(
                user_id=user, data_source_id=data_source_id, connection_id=connection_id
            )
        finally:
            await kernel.aclose()

    count = run_async(main())
    if as_json:
        emit_json({"cancelled": count})
    else:
        click.echo(f"cancelled {count} sync(s)")
