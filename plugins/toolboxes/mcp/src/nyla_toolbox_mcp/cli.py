"""``nyla mcp add/list/remove``: a user's MCP servers, or with ``--mandate`` those of a
mandate (for all its users). ``add`` connects once, lists the tools and keeps those whose
schema is valid (the others are shown with the reason)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from nyla.sdk import config_value

if TYPE_CHECKING:
    # the store (and SQLAlchemy under it) loads when a command runs, not when ``nyla --help``
    # registers the commands (see tests/test_lazy_sdk.py)
    from nyla_toolbox_mcp.servers import ListedTool, McpServer, ServerStore

T = TypeVar("T")


async def _listing(server: McpServer, signer: str | None, store: ServerStore) -> list[Any] | None:
    """The server's tools; for an OAuth server as ``signer`` (``None`` when nobody has
    signed in yet: the listing waits for the first sign-in)."""
    from nyla_toolbox_mcp.client import list_tools  # the MCP SDK loads when a server is added

    if server.oauth is None:
        return await list_tools(server)
    from nyla_toolbox_mcp.oauth_session import authorized

    grant = await store.grants.get(signer, server.name) if signer else None
    if signer is None or grant is None or grant.server_url != server.url:
        return None
    return await authorized(store.grants, signer, server, lambda auth: list_tools(server, auth))


async def add_server(
    store: ServerStore, user_id: str, server: McpServer, signer: str | None = None
) -> McpServer:
    """List ``server``'s tools, keep the valid ones, store it for ``user_id`` (the owner).
    An OAuth server is listed as the user ``signer`` who signed in to it, and stored
    without tools until someone has."""
    from nyla_toolbox_mcp.tools import accept, tool_name

    tools: list[ListedTool] = []
    refused: dict[str, str] = {}
    names: set[str] = set()
    for listed in await _listing(server, signer, store) or []:
        found = accept(listed)
        name = tool_name(server.name, listed.name)
        if isinstance(found, str):
            refused[listed.name] = found
        elif name in names:
            refused[listed.name] = f"its name {name!r} is taken by another of its tools"
        else:
            names.add(name)
            tools.append(found)
    stored = server.model_copy(update={"tools": tools, "refused": refused})
    await store.put(user_id, stored)
    return stored


def _pairs(values: tuple[str, ...], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        key, sep, rest = value.partition("=" if what == "env" else ":")
        if not sep or not key.strip():
            raise click.BadParameter(f"{value!r}: expected KEY{'=' if what == 'env' else ':'}VALUE")
        out[key.strip()] = rest.strip() if what == "header" else rest
    return out


def _echo(data: Any, as_json: bool, text: str) -> None:
    click.echo(json.dumps(data, indent=1) if as_json else text)


_user = click.option(
    "--user",
    "user_id",
    default=lambda: config_value("NYLA_USER") or "local",
    help="whose servers (default: NYLA_USER or 'local')",
)


_mandate = click.option(
    "--mandate",
    "mandate_id",
    default=None,
    help="a mandate's servers, for all its users (instead of one user's)",
)


def _owner(
    store: ServerStore, user_id: str, mandate_id: str | None
) -> tuple[ServerStore, str, str]:
    """The store, owner and its description for ``--user``/``--mandate``."""
    if mandate_id:
        return store.mandates(), mandate_id, f"mandate {mandate_id!r}"
    return store, user_id, f"user {user_id!r}"


@contextlib.asynccontextmanager
async def opened() -> AsyncIterator[ServerStore]:
    """The users' servers in the database this configuration's ``nyla`` commands use."""
    from nyla.sdk.database import configured_database
    from nyla_toolbox_mcp.servers import ServerStore

    db = configured_database()
    try:
        yield ServerStore(db)
    finally:
        await db.dispose()


def with_store(work: Callable[[ServerStore], Awaitable[T]]) -> T:
    """``work(store)`` in one event loop, over :func:`opened` (a command's one database)."""

    async def main() -> T:
        async with opened() as store:
            return await work(store)

    import anyio

    return anyio.run(main)


@click.group("mcp")
def mcp_group() -> None:
    """MCP servers as toolboxes (client) and nyla as an MCP server."""


@mcp_group.command("add")
@click.argument("name")
@click.option("--command", "command", help="stdio: the program to start")
@click.option("--arg", "args", multiple=True, help="stdio: one argument (repeatable)")
@click.option("--env", "env", multiple=True, help="stdio: KEY=VALUE (repeatable)")
@click.option("--url", help="streamable HTTP: the endpoint URL")
@click.option("--header", "headers", multiple=True, help="HTTP: 'Name: value' (repeatable)")
@click.option("--oauth", is_flag=True, help="HTTP: each user signs in with OAuth")
@click.option("--client-id", help="OAuth: a client registered at the authorization server")
@click.option("--client-secret", help="OAuth: that client's secret (sealed at rest)")
@click.option("--scope", "oauth_scope", help="OAuth: the scopes to ask for")
@click.option("--login/--no-login", default=True, help="OAuth: sign in now (default)")
@click.option("--timeout", "timeout_s", type=float, default=30.0, show_default=True)
@click.option("--start-timeout", "start_timeout_s", type=float, default=60.0, show_default=True)
@_user
@_mandate
@click.option("--json", "as_json", is_flag=True)
def add(
    name: str,
    command: str | None,
    args: tuple[str, ...],
    env: tuple[str, ...],
    url: str | None,
    headers: tuple[str, ...],
    oauth: bool,
    client_id: str | None,
    client_secret: str | None,
    oauth_scope: str | None,
    login: bool,
    timeout_s: float,
    start_timeout_s: float,
    user_id: str,
    mandate_id: str | None,
    as_json: bool,
) -> None:
    """Add (or replace) the MCP server NAME; it becomes the toolbox mcp:NAME. With --oauth
    the user signs in first (a browser window, or the printed URL), then its tools are
    listed."""
    if bool(command) == bool(url):
        raise click.UsageError("give either --command (stdio) or --url (streamable HTTP)")
    if not oauth and (client_id or client_secret or oauth_scope):
        raise click.UsageError("--client-id, --client-secret and --scope go with --oauth")
    from pydantic import ValidationError

    from nyla_toolbox_mcp.servers import McpServer, OAuthSettings

    try:
        server = McpServer(
            name=name,
            transport="stdio" if command else "http",
            command=command,
            args=list(args),
            env=_pairs(env, "env"),
            url=url,
            headers=_pairs(headers, "header"),
            oauth=OAuthSettings(client_id=client_id, client_secret=client_secret, scope=oauth_scope)
            if oauth
            else None,
            timeout_s=timeout_s,
            start_timeout_s=start_timeout_s,
        )
    except ValidationError as exc:
        raise click.UsageError("; ".join(e["msg"] for e in exc.errors())) from exc
    try:
        owner = mandate_id or user_id
        stored = with_store(
            lambda store: add_server(_owner(store, user_id, mandate_id)[0], owner, server)
        )
    except Exception as exc:
        raise click.ClickException(
            f"could not list the tools of {name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    if stored.oauth is not None and login:
        from nyla_toolbox_mcp.cli_oauth import login_now

        stored = login_now("mandate" if mandate_id else "user", owner, name, user_id)
    lines = [f"{stored.toolbox_id}: {len(stored.tools)} tools"]
    lines += [f"  refused {t}: {why}" for t, why in stored.refused.items()]
    _echo(stored.public(), as_json, "\n".join(lines))


@mcp_group.command("list")
@_user
@_mandate
@click.option("--json", "as_json", is_flag=True)
def list_servers(user_id: str, mandate_id: str | None, as_json: bool) -> None:
    """The user's (or the mandate's) MCP servers."""
    from nyla_toolbox_mcp.signin import state_of

    async def listing(store: ServerStore) -> list[dict[str, Any]]:
        owners, owner, _ = _owner(store, user_id, mandate_id)
        servers = await owners.servers(owner)
        return [{**s.public(), "signIn": await state_of(store, user_id, s)} for s in servers]

    shown = with_store(listing)
    text = "\n".join(
        f"{s['toolbox']}\t{s['transport']}\t{s['command'] or s['url']}\t{len(s['tools'])} tools"
        + _sign_in_text(s["signIn"])
        for s in shown
    )
    _echo(shown, as_json, text or "no MCP servers")


def _sign_in_text(state: dict[str, Any] | None) -> str:
    if state is None:
        return ""
    if not state["signedIn"]:
        return "\tOAuth: not signed in"
    return "\tOAuth: signed in" + (" (expired)" if state["expired"] else "")


@mcp_group.command("remove")
@click.argument("name")
@_user
@_mandate
@click.option("--json", "as_json", is_flag=True)
def remove(name: str, user_id: str, mandate_id: str | None, as_json: bool) -> None:
    """Remove the MCP server NAME."""
    from nyla_toolbox_mcp.signin import sign_out_everyone

    async def removing(store: ServerStore) -> int | None:
        owners, owner, _ = _owner(store, user_id, mandate_id)
        server = await owners.get(owner, name)
        if server is None or not await owners.remove(owner, name):
            return None
        if server.oauth is None:
            return 0
        return await sign_out_everyone(store, server, None if mandate_id else owner)

    signed_out = with_store(removing)
    if signed_out is None:
        whose = f"mandate {mandate_id!r}" if mandate_id else f"user {user_id!r}"
        raise click.ClickException(f"no MCP server {name!r} for {whose}")
    _echo({"removed": name, "signedOut": signed_out}, as_json, f"removed {name}")
