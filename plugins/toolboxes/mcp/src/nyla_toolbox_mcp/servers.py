"""The MCP servers a user configured, and those a mandate admin configured for every user of
the mandate: how to reach each (a stdio command or a streamable HTTP URL) and the tool
listing taken when it was added, kept in one JSON file per user (and per mandate, under
``mandates/``) in nyla's config directory, mode 0600, with the values of headers and env
(tokens, API keys) sealed by the keys that seal connection tokens."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from nyla.sdk import config_path, config_value
from nyla_toolbox_mcp.grants import GrantStore

if TYPE_CHECKING:
    from nyla.sdk import TokenCipher

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
    """Where the per-user server files are (``NYLA_MCP_DIR`` or next to the config file)."""
    explicit = config_value("NYLA_MCP_DIR")
    return Path(explicit) if explicit else config_path().parent / "mcp"


class ServerStore:
    """The servers of each user, one JSON file per user; :meth:`mandates` is the store of
    the mandates' servers (one file per mandate)."""

    def __init__(
        self,
        root: Path | None = None,
        cipher: TokenCipher | None = None,
        *,
        top: Path | None = None,
    ) -> None:
        self.root = root or store_dir()
        self._top = top or self.root
        self._cipher = cipher

    def mandates(self) -> ServerStore:
        """The servers each mandate's admin configured for all its users."""
        return ServerStore(self._top / "mandates", self._cipher, top=self._top)

    @property
    def grants(self) -> GrantStore:
        """The OAuth sign-ins of every user (one store beside the users' and mandates')."""
        return GrantStore(self._top / "oauth", lambda: self.cipher)

    def resolve(self, user_id: str, mandate_id: str | None, name: str) -> McpServer | None:
        """The server ``name`` a run of ``user_id`` in ``mandate_id`` calls: the user's own,
        else their mandate's; ``None`` when neither has one."""
        own = self.get(user_id, name) if user_id else None
        if own is None and mandate_id:
            own = self.mandates().get(mandate_id, name)
        return own

    @property
    def cipher(self) -> TokenCipher:
        """The configured keys' cipher, made on first use (a store only listed needs none)."""
        if self._cipher is None:
            # imported here: the cipher's cryptography is ~6 MiB that every nyla command
            # (indexing too) paid at plugin discovery, needed only when a server is read
            from nyla.sdk import TokenCipher

            self._cipher = TokenCipher.from_config()
        return self._cipher

    def _sealed(self, values: dict[str, str], seal: bool) -> dict[str, str]:
        change = self.cipher.encrypt if seal else self.cipher.decrypt
        return {k: change(v) for k, v in values.items()}

    def _sealed_oauth(self, oauth: OAuthSettings | None) -> OAuthSettings | None:
        if oauth is None or not oauth.client_secret:
            return oauth
        return oauth.model_copy(update={"client_secret": self.cipher.encrypt(oauth.client_secret)})

    def _file(self, user_id: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.@-]", "_", user_id)
        return self.root / f"{safe}.json"

    def users(self) -> list[str]:
        """Every user with a server file."""
        if not self.root.is_dir():
            return []
        return sorted(p.stem for p in self.root.glob("*.json"))

    def servers(self, user_id: str) -> list[McpServer]:
        """The user's servers, by name."""
        path = self._file(user_id)
        if not path.exists():
            return []
        servers = []
        for raw in json.loads(path.read_text(encoding="utf-8")):
            server = McpServer.model_validate(raw)
            server.env = self._sealed(server.env, seal=False)
            server.headers = self._sealed(server.headers, seal=False)
            if server.oauth and server.oauth.client_secret:
                server.oauth.client_secret = self.cipher.decrypt(server.oauth.client_secret)
            servers.append(server)
        return sorted(servers, key=lambda s: s.name)

    def get(self, user_id: str, name: str) -> McpServer | None:
        """The user's server ``name``, or ``None``."""
        return next((s for s in self.servers(user_id) if s.name == name), None)

    def put(self, user_id: str, server: McpServer) -> None:
        """Add or replace ``server``."""
        servers = [s for s in self.servers(user_id) if s.name != server.name] + [server]
        self._write(user_id, servers)

    def remove(self, user_id: str, name: str) -> bool:
        """Remove server ``name``; whether it existed."""
        servers = self.servers(user_id)
        kept = [s for s in servers if s.name != name]
        if len(kept) == len(servers):
            return False
        self._write(user_id, kept)
        return True

    def _write(self, user_id: str, servers: list[McpServer]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        path = self._file(user_id)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            sealed = [
                s.model_copy(
                    update={
                        "env": self._sealed(s.env, seal=True),
                        "headers": self._sealed(s.headers, seal=True),
                        "oauth": self._sealed_oauth(s.oauth),
                    }
                ).model_dump(mode="json")
                for s in servers
            ]
            json.dump(sealed, out, indent=1)
        tmp.replace(path)
