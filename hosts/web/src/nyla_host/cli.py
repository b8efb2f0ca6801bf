"""``nyla serve`` and ``nyla tokens create|list|revoke`` (added to the ``nyla`` command
through the ``nyla_cli_commands`` hook)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
from typing import Any

import click


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def _kernel(demo_model: bool = False, extra: tuple[str, ...] = ()) -> Any:
    import importlib

    from nyla.host import Kernel

    kernel = Kernel()
    if demo_model:
        from nyla_host.demo_model import DemoPlugin

        record = kernel.plugins.add_plugin(DemoPlugin(), "nyla_host.demo-model")
        if record.status != "ok":
            raise click.ClickException(f"the demo model failed to load: {record.error}")
    for spec in extra:
        module, _, attr = spec.partition(":")
        try:
            obj = importlib.import_module(module)
            obj = getattr(obj, attr)() if attr else obj
        except (ImportError, AttributeError) as exc:
            raise click.BadParameter(f"{spec}: {exc}", param_hint="--plugin") from exc
        record = kernel.plugins.add_plugin(obj, spec)
        if record.status != "ok":
            raise click.BadParameter(f"{spec}: {record.error}", param_hint="--plugin")
    return kernel


def _oidc(issuer: str | None, audience: str | None, jwks_url: str | None) -> Any:
    if not issuer:
        return None
    from nyla_host.oidc import OidcSettings

    return OidcSettings(issuer=issuer, audience=audience, jwks_url=jwks_url)


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--demo-model", is_flag=True, help="Add the scripted demo:echo model (no key).")
@click.option("--model", default=None, help="Default model of runs (e.g. openai:gpt-4o-mini).")
@click.option("--oidc-issuer", envvar="NYLA_OIDC_ISSUER", default=None, help="Accept JWTs.")
@click.option("--oidc-audience", envvar="NYLA_OIDC_AUDIENCE", default=None)
@click.option("--oidc-jwks-url", envvar="NYLA_OIDC_JWKS_URL", default=None)
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="MODULE[:FACTORY]",
    help="Register a plugin that is not installed (a module, or a factory returning one).",
)
@click.option("--log-level", default="warning", show_default=True)
def serve(
    host: str,
    port: int,
    demo_model: bool,
    model: str | None,
    oidc_issuer: str | None,
    oidc_audience: str | None,
    oidc_jwks_url: str | None,
    plugins: tuple[str, ...],
    log_level: str,
) -> None:
    """Serve the REST API, streamed agent runs and the web page."""
    import uvicorn

    from nyla_host.app import create_app
    from nyla_host.demo_model import MODEL_ID
    from nyla_host.state import HostSettings

    kernel = _kernel(demo_model, plugins)
    settings = HostSettings(default_model=model or (MODEL_ID if demo_model else None))
    ping = os.environ.get("NYLA_SSE_PING_S")
    if ping:
        settings.ping_interval_s = float(ping)
    app = create_app(
        kernel, settings=settings, oidc=_oidc(oidc_issuer, oidc_audience, oidc_jwks_url)
    )
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    click.echo(
        f"nyla serving on http://{shown}:{port}/  (sign in with a token: nyla tokens create)"
    )
    # keep-alive above uvicorn's 5 s: under load a queued client's idle connection was
    # closed just as it sent its next request (bench/host.py at 200 clients)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_keep_alive=30)
    # the kernel, its plugins and their modules live as long as the server: out of the
    # collector's reach, a full collection no longer walks them (server CPU per request
    # under load -10 to -20 %, bench/host.py)
    gc.collect()
    gc.freeze()
    uvicorn.Server(config).run()


@click.command("serve")
def mcp_serve() -> None:
    """Serve nyla over MCP on stdin/stdout (the knowledge search) for the user of the nyla
    API token in NYLA_TOKEN; without a valid one nothing is served."""
    token = os.environ.get("NYLA_TOKEN")
    if not (token or "").strip():
        raise click.ClickException("set NYLA_TOKEN to a nyla API token (nyla tokens create)")
    from nyla_host.mcp_server import NotAuthenticated, serve_stdio

    try:
        _run(serve_stdio(_kernel(), token))
    except NotAuthenticated as exc:
        raise click.ClickException(str(exc)) from exc


@click.group("tokens")
def tokens() -> None:
    """API tokens for `nyla serve` (stored hashed; shown once)."""


def _store() -> Any:
    import nyla_host.tables  # noqa: F401
    from nyla.host import Database
    from nyla_host.tokens import TokenStore

    return TokenStore(Database())


@tokens.command("create")
@click.option(
    "--user",
    "user_id",
    default=None,
    help="User id the token acts as (default: $NYLA_USER or local, the user every other "
    "nyla command acts as).",
)
@click.option("--role", default="user", show_default=True, help="user, mandate-admin, sysadmin")
@click.option("--mandate", default=None, help="Mandate id (required for mandate-admin).")
@click.option("--name", default="", help="A label to recognise the token by.")
@click.option("--expires-days", type=float, default=None, help="Expire after N days.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def create(
    user_id: str | None,
    role: str,
    mandate: str | None,
    name: str,
    expires_days: float | None,
    as_json: bool,
) -> None:
    """Create a token; it is printed once and never stored in clear."""
    from nyla.host import default_user

    async def go() -> tuple[str, Any]:
        store = _store()
        try:
            return await store.create(
                user_id or default_user(),
                role=role,
                mandate_id=mandate,
                name=name,
                expires_in_days=expires_days,
            )
        finally:
            await store.db.dispose()

    try:
        token, info = _run(go())
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    if as_json:
        click.echo(json.dumps({"token": token, **info.to_wire()}, indent=2))
        return
    click.echo(f"token {info.id} for {info.user_id} ({info.role}); keep it, it is shown once:")
    click.echo(token)


@tokens.command("list")
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked tokens.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_tokens(include_revoked: bool, as_json: bool) -> None:
    """Tokens (never their secrets)."""

    async def go() -> list[Any]:
        store = _store()
        try:
            return await store.list(include_revoked=include_revoked)
        finally:
            await store.db.dispose()

    rows = [t.to_wire() for t in _run(go())]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    def short(value: str | None) -> str:
        return value[:16].replace("T", " ") if value else "-"

    table = Table(title="API tokens", header_style="bold")
    table.add_column("id", no_wrap=True, min_width=12)
    columns = ("name", "user", "mandate", "role", "good for", "created", "last used", "revoked")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(
            row["id"],
            row["name"] or "-",
            row["userId"],
            row["mandateId"] or "-",
            row["role"],
            row["audience"] or "the API",  # an OAuth access token: the MCP endpoint only
            short(row["createdAt"]),
            short(row["lastUsedAt"]),
            short(row["revokedAt"]),
        )
    Console().print(table)


@tokens.command("revoke")
@click.argument("token_id")
def revoke(token_id: str) -> None:
    """Revoke a token by its id (or the whole token)."""

    async def go() -> bool:
        store = _store()
        try:
            return await store.revoke(token_id)
        finally:
            await store.db.dispose()

    if not _run(go()):
        raise click.ClickException(f"no active token {token_id}")
    click.echo(f"revoked {token_id}")
