"""``nyla mcp login NAME`` and ``nyla mcp logout NAME``: a user's OAuth sign-in to an MCP
server from the command line, the redirect caught on 127.0.0.1 (a port the system picks),
the URL printed (and a browser opened only where there is a display), the callback's
``state`` checked, the wait bounded."""

from __future__ import annotations

import os
import sys
import webbrowser
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import click

from nyla_toolbox_mcp.cli import _echo, _mandate, _user, mcp_group, with_store
from nyla_toolbox_mcp.errors import OAuthError

if TYPE_CHECKING:
    # the store loads when a command runs, not when the commands are registered
    from nyla_toolbox_mcp.servers import McpServer, ServerStore
    from nyla_toolbox_mcp.signin import Scope

#: how long ``login`` waits for the browser to come back
LOGIN_TIMEOUT_S = 300.0


def _has_browser() -> bool:
    """Whether a graphical browser can be opened (a text one would take the terminal)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


async def login_flow(
    store: ServerStore,
    scope: Scope,
    owner: str,
    name: str,
    user_id: str,
    *,
    show: Callable[[str], Awaitable[None] | None],
    timeout_s: float = LOGIN_TIMEOUT_S,
) -> McpServer:
    """Sign ``user_id`` in to the server ``name`` of ``owner``: ``show(url)`` tells the
    person where to go; the tools are listed again when the user owns the server (or an
    operator signs in for a mandate). The server as stored afterwards."""
    from nyla_toolbox_mcp.loopback import Loopback
    from nyla_toolbox_mcp.signin import complete, oauth_server, start

    async with Loopback() as loopback:
        url, pending = await start(
            store,
            user_id=user_id,
            scope=scope,
            owner=owner,
            name=name,
            redirect_uri=loopback.redirect_uri,
            relist=True,
        )
        shown = show(url)
        if shown is not None:
            await shown
        try:
            answer = await loopback.wait(timeout_s)
        except TimeoutError:
            await store.grants.take_pending(
                pending.state
            )  # the sign-in is over: nobody may finish it
            raise OAuthError(f"no sign-in within {timeout_s:g} s") from None
    if answer.get("state") != pending.state:
        await store.grants.take_pending(pending.state)
        raise OAuthError("the callback's state does not match this sign-in: refused")
    await complete(
        store,
        state=pending.state,
        code=answer.get("code", ""),
        error=" ".join(filter(None, [answer.get("error"), answer.get("error_description")])),
        iss=answer.get("iss"),
        user_id=user_id,
    )
    return await oauth_server(store, scope, owner, name)


def login_now(scope: Scope, owner: str, name: str, user_id: str, browser: bool = True) -> McpServer:
    """:func:`login_flow` from a command: the URL printed, a browser opened if one exists."""

    def show(url: str) -> None:
        click.echo(f"Sign in to the MCP server {name!r}:\n  {url}", err=True)
        if browser and _has_browser():
            webbrowser.open(url)

    try:
        return with_store(lambda store: login_flow(store, scope, owner, name, user_id, show=show))
    except (OAuthError, ValueError) as exc:
        raise click.ClickException(f"not signed in to {name!r}: {exc}") from None
    except Exception as exc:
        raise click.ClickException(
            f"not signed in to {name!r}: {type(exc).__name__}: {exc}"
        ) from None


@mcp_group.command("login")
@click.argument("name")
@click.option("--browser/--no-browser", default=True, help="open a browser if there is one")
@_user
@_mandate
@click.option("--json", "as_json", is_flag=True)
def login(name: str, browser: bool, user_id: str, mandate_id: str | None, as_json: bool) -> None:
    """Sign in to the OAuth MCP server NAME (the user's own, or with --mandate the
    mandate's) and list its tools again."""
    scope: Scope = "mandate" if mandate_id else "user"
    server = login_now(scope, mandate_id or user_id, name, user_id, browser)
    body: dict[str, Any] = {**server.public(), "signedIn": True}
    _echo(body, as_json, f"signed in to {name}: {len(server.tools)} tools")


@mcp_group.command("logout")
@click.argument("name")
@_user
@click.option("--json", "as_json", is_flag=True)
def logout(name: str, user_id: str, as_json: bool) -> None:
    """Sign out of the MCP server NAME: its tokens are revoked where the server offers it,
    and forgotten."""
    from nyla_toolbox_mcp.signin import sign_out

    done = with_store(lambda store: sign_out(store, user_id, name))
    if not done["signedOut"]:
        raise click.ClickException(f"{user_id!r} is not signed in to {name!r}")
    text = "signed out" + (" (tokens revoked)" if done["revoked"] else "")
    _echo({"name": name, **done}, as_json, text)
