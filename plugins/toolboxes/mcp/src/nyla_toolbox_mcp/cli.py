"""``nyla mcp add/list/remove``: a user's MCP servers, or with ``--mandate`` those of a
mandate (for all its users). ``add`` connects once, lists the tools and keeps those whose
schema is valid (the others are shown with the reason)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import click
from pydantic import ValidationError

from nyla.sdk import config_value
from nyla_toolbox_mcp.servers import ListedTool, McpServer, ServerStore
from nyla_toolbox_mcp.tools import accept, tool_name


async def add_server(store: ServerStore, user_id: str, server: McpServer) -> McpServer:
    """List ``server``'s tools, keep the valid ones, store it for ``user_id``."""
    from nyla_toolbox_mcp.client import list_tools  # the MCP SDK loads when a server is added

    tools: list[ListedTool] = []
    refused: dict[str, str] = {}
    names: set[str] = set()
    for listed in await list_tools(server):
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
    store.put(user_id, stored)
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


def _owner(user_id: str, mandate_id: str | None) -> tuple[ServerStore, str, str]:
    """The store, owner and its description for ``--user``/``--mandate``."""
    store = ServerStore()
    if mandate_id:
        return store.mandates(), mandate_id, f"mandate {mandate_id!r}"
    return store, user_id, f"user {user_id!r}"


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
    timeout_s: float,
    start_timeout_s: float,
    user_id: str,
    mandate_id: str | None,
    as_json: bool,
) -> None:
    """Add (or replace) the MCP server NAME; it becomes the toolbox mcp:NAME."""
    if bool(command) == bool(url):
        raise click.UsageError("give either --command (stdio) or --url (streamable HTTP)")
    try:
        server = McpServer(
            name=name,
            transport="stdio" if command else "http",
            command=command,
            args=list(args),
            env=_pairs(env, "env"),
            url=url,
            headers=_pairs(headers, "header"),
            timeout_s=timeout_s,
            start_timeout_s=start_timeout_s,
        )
    except ValidationError as exc:
        raise click.UsageError("; ".join(e["msg"] for e in exc.errors())) from exc
    try:
        store, owner, _ = _owner(user_id, mandate_id)
        stored = anyio.run(add_server, store, owner, server)
    except Exception as exc:
        raise click.ClickException(
            f"could not list the tools of {name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    lines = [f"{stored.toolbox_id}: {len(stored.tools)} tools"]
    lines += [f"  refused {t}: {why}" for t, why in stored.refused.items()]
    _echo(stored.public(), as_json, "\n".join(lines))


@mcp_group.command("list")
@_user
@_mandate
@click.option("--json", "as_json", is_flag=True)
def list_servers(user_id: str, mandate_id: str | None, as_json: bool) -> None:
    """The user's (or the mandate's) MCP servers."""
    store, owner, _ = _owner(user_id, mandate_id)
    servers = store.servers(owner)
    text = "\n".join(
        f"{s.toolbox_id}\t{s.transport}\t{s.command or s.url}\t{len(s.tools)} tools"
        for s in servers
    )
    _echo([s.public() for s in servers], as_json, text or "no MCP servers")


@mcp_group.command("remove")
@click.argument("name")
@_user
@_mandate
@click.option("--json", "as_json", is_flag=True)
def remove(name: str, user_id: str, mandate_id: str | None, as_json: bool) -> None:
    """Remove the MCP server NAME."""
    store, owner, whose = _owner(user_id, mandate_id)
    if not store.remove(owner, name):
        raise click.ClickException(f"no MCP server {name!r} for {whose}")
    _echo({"removed": name}, as_json, f"removed {name}")
