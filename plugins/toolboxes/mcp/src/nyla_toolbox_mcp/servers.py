"""The MCP servers a user configured, and those a mandate admin configured for every user of
the mandate: how to reach each (a stdio command or a streamable HTTP URL) and the tool
listing taken when it was added, kept as rows of the kernel's PostgreSQL (``mcp_servers``,
one per owner and name), so every process and machine on that database sees them, with the
values of headers and env (tokens, API keys) and a client secret sealed by the keys that
seal connection tokens."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import BaseModel, Field, field_validator, model_validator
from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from nyla.sdk import config_path, config_value
from nyla.sdk.database import kept_reads
from nyla_toolbox_mcp.grants import GrantStore
from nyla_toolbox_mcp.tables import servers as servers_table

if TYPE_CHECKING:
    from nyla.sdk import TokenCipher


class ServerRow(NamedTuple):
    """A server's row as a run reads it (:meth:`ServerStore.run_rows`): ``config`` sealed."""

    owner_scope: str
    owner_id: str
    name: str
    updated_at: Any
    config: dict[str, Any]


#: the rows of a run's owners (``(scope, id)`` pairs as two arrays), of one name or all
_RUN_ROWS = (
    f"SELECT {', '.join(ServerRow._fields)} FROM {servers_table.name}"
    " WHERE (owner_scope, owner_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
)
_RUN_ROWS_NAMED = _RUN_ROWS + " AND name = %s"

#: a server name: it becomes the toolbox id ``mcp:<name>`` and a prefix of tool names
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_START_TIMEOUT_S = 60.0


class ListedTool(BaseModel):
    """One tool as the server listed it (and nyla accepted it)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any]
    read_only: bool = False


class OAuthSettings(BaseModel):
    """How nyla signs in to an HTTP server with OAuth: a client the operator registered at
    the authorization server (``client_id``, ``client_secret``), else one registered
    dynamically at sign-in; ``scope`` asks for scopes other than the server's own."""

    client_id: str | None = Field(default=None, max_length=512)
    client_secret: str | None = Field(default=None, max_length=2048)
    scope: str | None = Field(default=None, max_length=1024)


class McpServer(BaseModel):
    """One configured MCP server: ``stdio`` (``command`` + ``args`` + ``env``) or ``http``
    (``url`` + ``headers``, and ``oauth`` when each user signs in to it), the bound on each
    call, and its accepted tools."""

    name: str
    transport: Literal["stdio", "http"]
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: OAuthSettings | None = None
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=600)
    start_timeout_s: float = Field(default=DEFAULT_START_TIMEOUT_S, gt=0, le=600)
    tools: list[ListedTool] = Field(default_factory=list)
    refused: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_PATTERN.match(value):
            raise ValueError(
                "a server name is 1-32 of a-z, 0-9, '_' or '-', starting with a letter"
            )
        return value

    @model_validator(mode="after")
    def _reachable(self) -> McpServer:
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio server needs a command")
        if self.transport == "http" and not (self.url or "").startswith(("http://", "https://")):
            raise ValueError("an http server needs an http(s) URL")
        if self.oauth is not None and self.transport != "http":
            raise ValueError("OAuth is for http servers only")
        if self.oauth and self.oauth.client_secret and not self.oauth.client_id:
            raise ValueError("a client secret needs its client id")
        return self

    @property
    def toolbox_id(self) -> str:
        """The toolbox the agent requests: ``mcp:<name>``."""
        return f"mcp:{self.name}"

    def public(self) -> dict[str, Any]:
        """What ``nyla mcp list`` shows: header and env values hidden."""
        return {
            "name": self.name,
            "toolbox": self.toolbox_id,
            "transport": self.transport,
            "command": self.command,
            "args": self.args,
            "url": self.url,
            "headers": sorted(self.headers),
            "env": sorted(self.env),
            "oauth": None
            if self.oauth is None
            else {"clientId": self.oauth.client_id, "scope": self.oauth.scope},
            "timeoutS": self.timeout_s,
            "startTimeoutS": self.start_timeout_s,
            "tools": [t.name for t in self.tools],
            "refused": self.refused,
        }


def store_dir() -> Path:
    """Where the server files of an earlier nyla are (``NYLA_MCP_DIR`` or next to the config
    file): imported into the database once (see :mod:`nyla_toolbox_mcp.file_import`)."""
    explicit = config_value("NYLA_MCP_DIR")
    return Path(explicit) if explicit else config_path().parent / "mcp"


Scope = Literal["user", "mandate"]


class ServerStore:
    """The servers of each user in the kernel's database (``db``, a ``nyla.host.Database``);
    :meth:`mandates` is the store of the mandates' servers. The plugin's tables are created
    and the files of an earlier nyla imported on first use."""

    def __init__(
        self,
        db: Any,
        cipher: TokenCipher | None = None,
        *,
        scope: Scope = "user",
        import_from: Path | None = None,
    ) -> None:
        self.db = db
        self.scope: Scope = scope
        self._cipher = cipher
        self._import_from = import_from
        self._ready = False
        #: the rows each run's owners read, kept until ``mcp_servers`` changes anywhere; made
        #: now, not at the first read, because it also hooks this store's writes: a server
        #: removed through this object is out of every store's kept rows in this process at
        #: once (a CLI command run in a host's process), not when the notification arrives
        self._run_rows = kept_reads(db, [servers_table.name])

    def mandates(self) -> ServerStore:
        """The servers each mandate's admin configured for all its users."""
        return self.of("mandate")

    def of(self, scope: Scope) -> ServerStore:
        """The servers of ``scope`` (a user's own, or a mandate's), on the same database."""
        return ServerStore(self.db, self._cipher, scope=scope, import_from=self._import_from)

    @property
    def grants(self) -> GrantStore:
        """The OAuth sign-ins of every user (one store beside the users' and mandates')."""
        return GrantStore(self.db, lambda: self.cipher, ready=self.ready)

    @property
    def cipher(self) -> TokenCipher:
        """The configured keys' cipher, made on first use (a store only listed needs none)."""
        if self._cipher is None:
            # imported here: the cipher's cryptography is ~6 MiB that every nyla command
            # (indexing too) paid at plugin discovery, needed only when a server is read
            from nyla.sdk import TokenCipher

            self._cipher = TokenCipher.from_config()
        return self._cipher

    async def ready(self) -> None:
        """The plugin's tables exist and an earlier nyla's files are imported (once per
        database and folder in a process). The folder (:func:`store_dir`) is looked up when
        the store is first ready, not on every call: looking it up reads the configuration
        (platformdirs), about 0.2 ms of every agent run's start for a folder whose files are
        imported once."""
        if self._ready:
            return
        from nyla_toolbox_mcp.file_import import ensure_ready

        await ensure_ready(self.db, self._import_from or store_dir(), lambda: self.cipher)
        self._ready = True

    def seal(self, server: McpServer) -> dict[str, Any]:
        """``server`` as its row keeps it: header and env values and a client secret sealed."""
        return seal_server(server, self.cipher)

    def open(self, config: dict[str, Any]) -> McpServer:
        """The server a row keeps, its sealed values opened."""
        return open_server(config, self.cipher)

    async def resolve(self, user_id: str, mandate_id: str | None, name: str) -> McpServer | None:
        """The server ``name`` a run of ``user_id`` in ``mandate_id`` calls: the user's own,
        else their mandate's; ``None`` when neither has one."""
        found = await self.for_run(user_id, mandate_id, name)
        return found[0] if found else None

    async def for_run(
        self, user_id: str, mandate_id: str | None, name: str | None = None
    ) -> list[McpServer]:
        """The servers a run of ``user_id`` in ``mandate_id`` may call (of ``name`` only,
        when given), one per name: the user's own, else the mandate's (one query)."""
        rows = await self.run_rows(user_id, mandate_id, name)
        return [self.open(row.config) for row in rows]

    async def run_rows(
        self, user_id: str, mandate_id: str | None, name: str | None = None
    ) -> list[ServerRow]:
        """The rows (sealed) of :meth:`for_run`, by name, with ``owner_scope``, ``owner_id``
        and ``updated_at``: what a caller keeps built things by. Every agent run reads them:
        they are kept per owners and name in this process until ``mcp_servers`` changes,
        here or in any other process (``nyla.sdk.database.kept_reads``: a server added
        elsewhere is in the next run once its commit's notification arrived, within a round
        trip). A read is one statement on a driver connection of the kernel's read pool
        (``db.read_driver``; through SQLAlchemy it cost about 2 ms of CPU a run)."""
        if not user_id and not mandate_id:
            return []
        await self.ready()
        rows: tuple[ServerRow, ...] = await self._run_rows.get(
            (user_id, mandate_id, name), lambda: self._read_run_rows(user_id, mandate_id, name)
        )
        return list(rows)

    async def _read_run_rows(
        self, user_id: str, mandate_id: str | None, name: str | None
    ) -> tuple[ServerRow, ...]:
        owners: list[tuple[str, str]] = []
        if user_id:
            owners.append(("user", user_id))
        if mandate_id:
            owners.append(("mandate", mandate_id))
        scopes, ids = [o[0] for o in owners], [o[1] for o in owners]
        sql, params = (
            (_RUN_ROWS_NAMED, (scopes, ids, name))
            if name is not None
            else (_RUN_ROWS, (scopes, ids))
        )
        rows = await self.db.read_driver(lambda conn: conn.rows(sql, params))
        chosen: dict[str, ServerRow] = {}
        for row in sorted(map(ServerRow._make, rows), key=lambda r: r.owner_scope != "user"):
            chosen.setdefault(row.name, row)  # the user's first
        return tuple(chosen[n] for n in sorted(chosen))

    async def users(self) -> list[str]:
        """Every owner (of this store's scope) with a server."""
        await self.ready()
        query = (
            select(servers_table.c.owner_id)
            .where(servers_table.c.owner_scope == self.scope)
            .distinct()
            .order_by(servers_table.c.owner_id)
        )
        async with self.db.session() as s:
            return list((await s.execute(query)).scalars())

    async def servers(self, owner: str) -> list[McpServer]:
        """The owner's servers, by name."""
        await self.ready()
        query = (
            select(servers_table.c.config)
            .where(servers_table.c.owner_scope == self.scope, servers_table.c.owner_id == owner)
            .order_by(servers_table.c.name)
        )
        async with self.db.session() as s:
            rows = list((await s.execute(query)).scalars())
        return [self.open(config) for config in rows]

    async def get(self, owner: str, name: str) -> McpServer | None:
        """The owner's server ``name``, or ``None``."""
        await self.ready()
        query = select(servers_table.c.config).where(
            servers_table.c.owner_scope == self.scope,
            servers_table.c.owner_id == owner,
            servers_table.c.name == name,
        )
        async with self.db.session() as s:
            config = (await s.execute(query)).scalar()
        return None if config is None else self.open(config)

    async def put(self, owner: str, server: McpServer) -> None:
        """Add or replace ``server``."""
        await self.ready()
        row = {
            "owner_scope": self.scope,
            "owner_id": owner,
            "name": server.name,
            "config": self.seal(server),
        }
        upsert = pg_insert(servers_table).values(**row)
        upsert = upsert.on_conflict_do_update(
            index_elements=["owner_scope", "owner_id", "name"],
            set_={"config": upsert.excluded.config, "updated_at": upsert.excluded.updated_at},
        )
        async with self.db.session() as s:
            await s.execute(upsert)

    async def remove(self, owner: str, name: str) -> bool:
        """Remove server ``name``; whether it existed."""
        await self.ready()
        gone = delete(servers_table).where(
            servers_table.c.owner_scope == self.scope,
            servers_table.c.owner_id == owner,
            servers_table.c.name == name,
        )
        async with self.db.session() as s:
            return bool((await s.execute(gone)).rowcount)


def seal_server(server: McpServer, cipher: TokenCipher) -> dict[str, Any]:
    """``server`` as JSON with its header and env values and a client secret sealed."""
    oauth = server.oauth
    if oauth is not None and oauth.client_secret:
        oauth = oauth.model_copy(update={"client_secret": cipher.encrypt(oauth.client_secret)})
    sealed = server.model_copy(
        update={
            "env": {k: cipher.encrypt(v) for k, v in server.env.items()},
            "headers": {k: cipher.encrypt(v) for k, v in server.headers.items()},
            "oauth": oauth,
        }
    )
    return sealed.model_dump(mode="json")


def open_server(config: dict[str, Any], cipher: TokenCipher) -> McpServer:
    """The server of sealed JSON (a row's, or an earlier nyla's file's), its values opened."""
    server = McpServer.model_validate(config)
    server.env = {k: cipher.decrypt(v) for k, v in server.env.items()}
    server.headers = {k: cipher.decrypt(v) for k, v in server.headers.items()}
    if server.oauth and server.oauth.client_secret:
        server.oauth.client_secret = cipher.decrypt(server.oauth.client_secret)
    return server
