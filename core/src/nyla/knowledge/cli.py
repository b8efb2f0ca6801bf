"""``nyla knowledge``: index local files, search, inventory, purge, show a file's structure."""

from __future__ import annotations

import shutil
import sys
import tempfile
import textwrap
import time
from typing import IO, TYPE_CHECKING, Any

import click

from nyla.commands.output import (
    emit_json,
    json_line,
    json_option,
    progress_bar,
    run_async,
    table,
)
from nyla.identity import default_user
from nyla.knowledge.reindex_cli import reindex
from nyla.models.knowledge import SearchQuery

if TYPE_CHECKING:
    from nyla.kernel import Kernel

SCOPES = ["personal", "featureInstance", "mandate", "global"]
USER_DEFAULT = "$NYLA_USER or local"


def user_option(fn: Any) -> Any:
    """``--user``: the identity the command acts as (the same default as ``nyla run``)."""
    return click.option(
        "--user", "user", default=default_user, show_default=USER_DEFAULT, help="User id."
    )(fn)


def _context_options(fn: Any) -> Any:
    fn = click.option("--instance", "instance", default=None, help="Feature instance id.")(fn)
    fn = click.option("--mandate", "mandate", default=None, help="Mandate id.")(fn)
    fn = user_option(fn)
    return click.option("--model", default=None, help="Embedding model id (default: AI's).")(fn)


def _kernel(model: str | None) -> Any:
    from nyla.kernel import Kernel

    settings = {"knowledge": {"embedding_model": model}} if model else {}
    return Kernel(settings=settings)


def _context(user: str, mandate: str | None, instance: str | None) -> Any:
    from nyla.models.agent import RunContext

    return RunContext(user_id=user, mandate_id=mandate, feature_instance_id=instance)


def _mb(n: float) -> str:
    return f"{n / 1_048_576:.2f}"


@click.group()
def knowledge() -> None:
    """Index, search and purge the knowledge store (PostgreSQL + pgvector)."""


@knowledge.command("index")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--scope",
    type=click.Choice(SCOPES),
    default="personal",
    show_default=True,
    help="Who may read it.",
)
@click.option("--neutralize", is_flag=True, help="Replace personal data before storing (at rest).")
@_context_options
@json_option
def index_command(
    paths: tuple[str, ...],
    scope: str,
    neutralize: bool,
    model: str | None,
    user: str,
    mandate: str | None,
    instance: str | None,
    as_json: bool,
) -> None:
    """Index files and directories (txt, md, html, pdf, docx, csv, json)."""
    from nyla.knowledge.local_paths import iter_paths

    async def go(sink: _JsonResults | None) -> list[Any]:
        kernel = _kernel(model)
        try:
            ctx = _context(user, mandate, instance)
            await kernel.service_access.check_run(ctx, "service.knowledge")
            return await _index_with_progress(kernel, paths, ctx, scope, neutralize, sink)
        finally:
            await kernel.aclose()

    if next(iter_paths(paths), None) is None:
        raise click.ClickException(
            f"no files found under {', '.join(paths)} (indexable: txt, md, html, pdf, docx, "
            "csv, json; hidden entries are skipped)"
        )
    with tempfile.SpooledTemporaryFile(max_size=1 << 20, mode="w+", encoding="utf-8") as spool:
        sink = _JsonResults(spool) if as_json else None
        results = run_async(go(sink))
        if sink is not None:
            sink.emit()
            if sink.failed:
                raise SystemExit(1)
            return
    ok = [r for r in results if r.status == "indexed"]
    table(
        "indexed",
        ["file", "status", "chunks", "embedded", "reused", "tokens", "KB", "note"],
        [
            (
                r.name,
                r.status,
                r.chunks,
                r.embedded,
                r.reused,
                r.tokens,
                f"{r.bytes / 1024:.1f}",
                r.error or ("neutralized" if r.is_neutralized else ""),
            )
            for r in results
        ],
    )
    click.echo(
        f"{len(ok)} of {len(results)} files indexed, {sum(r.chunks for r in ok)} chunks, "
        f"model {next((r.embedding_model for r in ok), '-')}, "
        f"CHF {sum(r.cost_chf for r in results):.6f}"
    )
    if len(ok) < len(results):
        raise SystemExit(1)


class _JsonResults:
    """The ``--json`` list of an index run, written result by result to ``file`` (a spooled
    temporary file) as the files complete and printed at the end: the run itself keeps no result, so its memory
    does not grow with the number of files."""

    def __init__(self, file: IO[str]) -> None:
        self.file = file
        self.count = 0
        self.failed = 0

    def add(self, result: Any) -> None:
        """Append one result (as ``emit_json`` prints a list: indented by two)."""
        item = textwrap.indent(json_line(result.to_wire(), indent=2), "  ")
        self.file.write(("[\n" if not self.count else ",\n") + item)
        self.count += 1
        self.failed += result.status != "indexed"

    def emit(self) -> None:
        """Print the list on stdout."""
        if not self.count:
            click.echo("[]")
            return
        self.file.write("\n]\n")
        self.file.seek(0)
        shutil.copyfileobj(self.file, sys.stdout)
        sys.stdout.flush()


async def _index_with_progress(
    kernel: Kernel,
    paths: tuple[str, ...],
    ctx: Any,
    scope: str,
    neutralize: bool,
    sink: _JsonResults | None,
) -> list[Any]:
    """``index_paths`` under a progress bar (files, chunks, MB/s) on stderr; with a ``sink``
    (``--json``) each result goes to it instead of the returned list. The bar's total is the
    one ``index_paths`` counts (its files are walked once more as they are indexed, never
    held)."""
    counters = {"chunks": 0, "bytes": 0}
    started = time.perf_counter()
    detail = "files · {task.fields[chunks]} chunks · {task.fields[rate]} MB/s"
    with progress_bar("indexing", detail, quiet=sink is not None) as bar:
        task = bar.add_task("index", total=None, chunks=0, rate="0.00")

        def on_file(result: Any, done: int, total: int) -> None:
            if sink is not None:
                sink.add(result)
            counters["chunks"] += result.chunks
            counters["bytes"] += result.bytes
            elapsed = max(time.perf_counter() - started, 1e-6)
            bar.update(
                task,
                completed=done,
                total=total,
                chunks=counters["chunks"],
                rate=_mb(counters["bytes"] / elapsed),
            )

        return await kernel.knowledge.indexing.index_paths(
            paths,
            context=ctx,
            scope=scope,
            neutralize=neutralize,
            progress=on_file,
            keep_results=sink is None,
        )


@knowledge.command("search")
@click.argument("query")
@click.option("--k", "k", default=10, show_default=True, type=click.IntRange(1, 200))
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES), help="Limit scopes.")
@click.option("--no-hybrid", is_flag=True, help="Vector ranking only (no full-text fusion).")
@click.option(
    "--rerank/--no-rerank",
    default=None,
    help="Reorder the best hits with a reranking model (a model call; default: the setting).",
)
@_context_options
@json_option
def search_command(
    query: str,
    k: int,
    scopes: tuple[str, ...],
    no_hybrid: bool,
    rerank: bool | None,
    model: str | None,
    user: str,
    mandate: str | None,
    instance: str | None,
    as_json: bool,
) -> None:
    """Semantic (hybrid) search over what the given user may read."""

    async def go() -> Any:
        kernel = _kernel(model)
        try:
            ctx = _context(user, mandate, instance)
            await kernel.service_access.check_run(ctx, "service.knowledge")
            result = await kernel.knowledge.search(
                SearchQuery(
                    text=query,
                    context=_context(user, mandate, instance),
                    scopes=list(scopes) or None,
                    k=k,
                    hybrid=not no_hybrid,
                    rerank=rerank,
                )
            )
            files = 1
            if not result.hits:
                files = (await kernel.knowledge.inventory("user", user)).totals.files
            return result, files
        finally:
            await kernel.aclose()

    result, indexed_files = run_async(go())
    if as_json:
        emit_json(result.to_wire())
        return
    if not result.hits and not indexed_files:
        click.echo(
            f"nothing is indexed yet for user {user} (run `nyla knowledge index PATH`)", err=True
        )
        return
    table(
        f"{len(result.hits)} hits ({result.path}{', hybrid' if result.hybrid else ''}, "
        f"{result.embedding_model}"
        f"{f', reranked by {result.reranked_by}' if result.reranked_by else ''})",
        ["#", "score", "distance", "file", "where", "scope", "text"],
        [
            (
                i,
                f"{h.score:.4f}",
                "" if h.distance is None else f"{h.distance:.4f}",
                h.file_name,
                h.context_ref,
                h.scope,
                " ".join(h.text.split())[:160],
            )
            for i, h in enumerate(result.hits, start=1)
        ],
    )


@knowledge.command("inventory")
@click.option(
    "--level", type=click.Choice(["user", "mandate", "platform"]), default="user", show_default=True
)
@user_option
@click.option("--mandate", default=None, help="Mandate id (level mandate).")
@json_option
def inventory_command(level: str, user: str, mandate: str | None, as_json: bool) -> None:
    """What is indexed: files, chunks, bytes, last indexed, running jobs."""
    from nyla.kernel import Kernel

    subject = {"user": user, "mandate": mandate, "platform": None}[level]
    if level == "mandate" and not mandate:
        raise click.UsageError("--level mandate needs --mandate ID")

    async def go() -> Any:
        kernel = Kernel()
        try:
            return await kernel.knowledge.inventory(level, subject)
        finally:
            await kernel.aclose()

    inv = run_async(go())
    if as_json:
        emit_json({**inv.to_wire(), "totals": inv.totals.to_wire()})
        return
    rows = [*inv.rows, inv.totals]
    table(
        f"knowledge inventory ({level}{': ' + subject if subject else ''})",
        ["scope", "owner", "files", "failed", "chunks", "MB", "last indexed"],
        [
            (
                r.scope,
                r.owner or "",
                r.files,
                r.failed_files,
                r.chunks,
                _mb(r.bytes),
                r.last_indexed.strftime("%Y-%m-%d %H:%M") if r.last_indexed else "",
            )
            for r in rows
        ],
    )
    if inv.jobs:
        table(
            "running jobs",
            ["id", "kind", "progress", "message", "started"],
            [
                (j.id, j.kind, f"{j.progress}/{j.total or '?'}", j.message, j.started_at)
                for j in inv.jobs
            ],
        )


@knowledge.command("purge")
@click.option("--file", "file_ids", multiple=True, help="File id (repeatable).")
@click.option("--data-source", "data_source_id", default=None)
@click.option("--connection", "connection_id", default=None)
@click.option("--owner", "owner_user_id", default=None, help="Every file this user owns.")
@click.option("--mandate", "mandate_id", default=None)
@click.option(
    "--actor", default=default_user, show_default=USER_DEFAULT, help="Who purges (audited)."
)
@click.option("--admin", is_flag=True, help="Purge as platform admin (files of any owner).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def purge_command(
    file_ids: tuple[str, ...],
    data_source_id: str | None,
    connection_id: str | None,
    owner_user_id: str | None,
    mandate_id: str | None,
    actor: str,
    admin: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Delete indexed files and their chunks (all criteria must match), in one transaction.
    The actor may purge only its own files unless ``--admin``; otherwise nothing is
    deleted."""
    from nyla.kernel import Kernel

    if not (file_ids or data_source_id or connection_id or owner_user_id or mandate_id):
        raise click.UsageError(
            "give at least one of --file, --data-source, --connection, --owner, --mandate"
        )
    if not yes and not as_json:
        click.confirm("Delete the matching files and chunks from the knowledge store?", abort=True)

    async def go() -> Any:
        kernel = Kernel()
        try:
            return await kernel.knowledge.governance.purge(
                actor=actor,
                file_ids=list(file_ids) or None,
                data_source_id=data_source_id,
                connection_id=connection_id,
                owner_user_id=owner_user_id,
                mandate_id=mandate_id,
                is_platform_admin=admin,
            )
        finally:
            await kernel.aclose()

    result = run_async(go())
    if as_json:
        emit_json(result.to_wire())
        return
    click.echo(f"purged {result.files} files, {result.chunks} chunks")


@knowledge.command("show")
@click.argument("file_id")
@user_option
@click.option("--mandate", default=None)
@click.option("--instance", default=None)
@json_option
def show_command(
    file_id: str, user: str, mandate: str | None, instance: str | None, as_json: bool
) -> None:
    """A file's index entry: status, scope, summary and structure (pages, sections, tables)."""
    from nyla.kernel import Kernel

    async def go() -> Any:
        kernel = Kernel()
        try:
            return await kernel.knowledge.retrieval.file_index(
                file_id, _context(user, mandate, instance)
            )
        finally:
            await kernel.aclose()

    row = run_async(go())
    if row is None:
        raise click.ClickException(f"no indexed file {file_id} readable by {user}")
    data = {
        "fileId": row.file_id,
        "name": row.name,
        "status": row.status,
        "error": row.error,
        "scope": row.scope,
        "ownerKey": row.owner_key,
        "chunks": row.chunk_count,
        "tokens": row.token_count,
        "embeddingModel": row.embedding_model,
        "isNeutralized": row.is_neutralized,
        "summary": row.object_summary,
        "structure": row.structure,
        "indexedAt": row.indexed_at,
    }
    if as_json:
        emit_json(data)
        return
    table(row.name, ["field", "value"], [(k, v) for k, v in data.items() if k != "structure"])
    for key in ("sections", "tables", "pages"):
        entries = (row.structure or {}).get(key) or []
        if entries:
            table(key, list(entries[0]), [list(e.values()) for e in entries])


knowledge.add_command(reindex)
