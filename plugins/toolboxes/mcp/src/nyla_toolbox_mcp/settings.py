"""The MCP servers as a settings section of the host (``nyla_settings_sections``): a user's
own servers, or a mandate's for all its users, listed, added (connecting once to list the
tools, as ``nyla mcp add`` does) and removed; header and env values are never answered.

An OAuth server is listed at its first sign-in. The section also signs the host's user in
and out (``begin_sign_in`` / ``finish_sign_in`` / ``sign_out`` / ``sign_in_states``, the
methods the host's sign-in routes look for): the callback comes back to the host."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from nyla.sdk import SettingsScope, SettingsSection

if TYPE_CHECKING:
    # imported when used, not at discovery: ``nyla --help`` imports no database layer
    from nyla_toolbox_mcp.servers import ServerStore

#: the fields of an entry a host may send (the listing is taken from the server)
FIELDS = {
    "name": "name",
    "command": "command",
    "args": "args",
    "env": "env",
    "url": "url",
    "headers": "headers",
    "timeoutS": "timeout_s",
    "startTimeoutS": "start_timeout_s",
    "oauth": "oauth",
}
#: the fields of ``oauth`` (``true`` alone: a client registered at the first sign-in)
OAUTH_FIELDS = {"clientId": "client_id", "clientSecret": "client_secret", "scope": "scope"}


def _oauth(value: Any) -> dict[str, Any] | None:
    """``oauth`` of a body: ``true``, or an object of :data:`OAUTH_FIELDS`."""
    if value in (None, False):
        return None
    if value is True:
        return {}
    if not isinstance(value, dict) or set(value) - set(OAUTH_FIELDS):
        raise ValueError(f"oauth is true or an object of {', '.join(OAUTH_FIELDS)}")
    return {OAUTH_FIELDS[k]: v for k, v in value.items()}


class McpSettings(SettingsSection):
    """``mcp``: the MCP servers of a user or a mandate."""

    id = "mcp"
    label = "MCP servers"

    def __init__(self, store: ServerStore | None = None) -> None:
        self._store = store

    def bind(self, db: Any) -> None:
        """Keep the servers in the kernel's database ``db`` (the host binds its kernel's)."""
        from nyla_toolbox_mcp.servers import ServerStore

        if self._store is None or self._store.db is not db:
            self._store = ServerStore(db)

    @property
    def store(self) -> ServerStore:
        """The users' servers (of the bound database)."""
        if self._store is None:
            raise RuntimeError("the MCP settings section is not bound to a database")
        return self._store

    def _owners(self, scope: SettingsScope) -> ServerStore:
        return self.store.of(scope)

    async def entries(self, scope: SettingsScope, owner: str) -> list[dict[str, Any]]:
        return [s.public() for s in await self._owners(scope).servers(owner)]

    async def add(self, scope: SettingsScope, owner: str, body: dict[str, Any]) -> dict[str, Any]:
        from nyla_toolbox_mcp.cli import add_server
        from nyla_toolbox_mcp.servers import McpServer

        unknown = sorted(set(body) - set(FIELDS))
        if unknown:
            raise ValueError(f"unknown fields: {', '.join(unknown)}")
        values = {FIELDS[k]: v for k, v in body.items()}
        values["oauth"] = _oauth(values.get("oauth"))
        if bool(values.get("command")) == bool(values.get("url")):
            raise ValueError("give either command (stdio) or url (streamable HTTP)")
        values["transport"] = "stdio" if values.get("command") else "http"
        try:
            server = McpServer.model_validate(values)
        except ValidationError as exc:
            raise ValueError("; ".join(e["msg"] for e in exc.errors())) from None
        try:
            signer = owner if scope == "user" else None  # a signed-in owner lists it now
            stored = await add_server(self._owners(scope), owner, server, signer)
        except Exception as exc:  # nothing is stored when the server cannot be listed
            raise ValueError(
                f"could not list the tools of {server.name!r}: {type(exc).__name__}"
            ) from None
        return stored.public()

    async def remove(self, scope: SettingsScope, owner: str, name: str) -> bool:
        owners = self._owners(scope)
        server = await owners.get(owner, name)
        if server is None or not await owners.remove(owner, name):
            return False
        if server.oauth is not None:  # its sign-ins go with it (revoked where offered)
            from nyla_toolbox_mcp.signin import sign_out_everyone

            await sign_out_everyone(self.store, server, owner if scope == "user" else None)
        return True

    async def sign_in_states(
        self, scope: SettingsScope, owner: str, user_id: str
    ) -> dict[str, dict[str, Any]]:
        """``user_id``'s sign-in to each OAuth server of the owner, by server name."""
        from nyla_toolbox_mcp.signin import state_of

        found = {
            s.name: await state_of(self.store, user_id, s)
            for s in await self._owners(scope).servers(owner)
        }
        return {name: state for name, state in found.items() if state is not None}

    async def begin_sign_in(
        self,
        scope: SettingsScope,
        owner: str,
        name: str,
        *,
        user_id: str,
        redirect_uri: str,
        relist: bool,
    ) -> str:
        """The URL that signs ``user_id`` in to the owner's server ``name`` (``ValueError``
        with the reason when it cannot begin)."""
        from nyla_toolbox_mcp.signin import start

        try:
            url, _ = await start(
                self.store,
                user_id=user_id,
                scope=scope,
                owner=owner,
                name=name,
                redirect_uri=redirect_uri,
                relist=relist,
            )
        except ValueError:
            raise
        except Exception as exc:  # the server or its authorization server: said, not raised
            raise ValueError(f"cannot sign in to {name!r}: {_reason(exc)}") from None
        return url

    async def finish_sign_in(
        self, *, state: str, code: str, error: str = "", iss: str | None = None
    ) -> dict[str, str]:
        """Finish the sign-in of ``state`` (its user is the one who began it): the server's
        name and scope, or ``ValueError`` with what went wrong."""
        from nyla_toolbox_mcp.signin import complete

        try:
            done = await complete(self.store, state=state, code=code, error=error, iss=iss)
        except Exception as exc:
            raise ValueError(_reason(exc)) from None
        return {"name": done.server, "scope": done.scope}

    async def sign_out(self, user_id: str, name: str) -> dict[str, bool]:
        """Sign ``user_id`` out of the server ``name`` (its tokens revoked where offered)."""
        from nyla_toolbox_mcp.signin import sign_out

        return await sign_out(self.store, user_id, name)


def _reason(exc: BaseException) -> str:
    """What a person is told of a failed sign-in: nyla's own reasons as they are, anything
    else by its kind (a library's message may hold a token or an address)."""
    from nyla_toolbox_mcp.errors import OAuthError, SignInRequired

    if isinstance(exc, OAuthError | SignInRequired):
        return str(exc)
    return type(exc).__name__
