"""The OAuth sign-ins to MCP servers: per user and server the tokens, the client nyla is
registered as and what was discovered of the authorization server (a *grant*), and the
sign-ins under way (a *pending* one, found by its ``state``, taken once, expiring). Every
file holds one ciphertext sealed with the keys that seal connection tokens, mode 0600, so
nothing of a token is readable at rest. A refresh runs under the grant's lock (an exclusive
``flock``), so two calls of one user never spend the same refresh token."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from nyla.sdk import TokenCipher

#: how long a sign-in may take from its start to the callback
PENDING_TTL_S = 600.0
#: a token this close to its expiry is refreshed before it is used
EXPIRY_MARGIN_S = 30.0
#: the longest a call waits for another call's refresh of the same grant
LOCK_TIMEOUT_S = 30.0


class Grant(BaseModel):
    """One user's sign-in to one server: ``tokens`` (the token response), when the access
    token expires (epoch seconds, ``None`` when the server said nothing), the registered
    ``client`` and the discovered ``auth_server`` (RFC 8414) and ``resource_metadata`` (RFC
    9728) as JSON, and the ``resource`` (RFC 8707) the tokens were asked for."""

    server_url: str
    resource: str
    tokens: dict[str, Any]
    expires_at: float | None = None
    client: dict[str, Any]
    auth_server: dict[str, Any]
    resource_metadata: dict[str, Any] | None = None
    redirect_uri: str
    signed_in_at: float = Field(default_factory=time.time)

    def expired(self, margin: float = EXPIRY_MARGIN_S) -> bool:
        """Whether the access token is (nearly) past its expiry."""
        return self.expires_at is not None and time.time() + margin >= self.expires_at

    @property
    def refresh_token(self) -> str | None:
        """The refresh token, if the server gave one."""
        value = self.tokens.get("refresh_token")
        return value if isinstance(value, str) and value else None


class Pending(BaseModel):
    """A sign-in under way: who began it (``user_id``; the server of ``scope`` ``owner``),
    the PKCE verifier, and everything the callback needs to exchange the code."""

    state: str
    user_id: str
    scope: Literal["user", "mandate"]
    owner: str
    server: str
    server_url: str
    verifier: str
    redirect_uri: str
    resource: str
    client: dict[str, Any]
    auth_server: dict[str, Any]
    resource_metadata: dict[str, Any] | None = None
    #: list the server's tools again once signed in (the server's owner signed in)
    relist: bool = False
    expires_at: float = Field(default_factory=lambda: time.time() + PENDING_TTL_S)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", text)


class GrantStore:
    """Grants in ``<root>/<user>/<server>.json``, pending sign-ins in ``<root>/pending/``
    (named by a hash of their state, so not even the file names hold one)."""

    def __init__(self, root: Path, cipher: Callable[[], TokenCipher]) -> None:
        self.root = root
        self._cipher = cipher

    def _file(self, user_id: str, server: str) -> Path:
        return self.root / "users" / _safe(user_id) / f"{_safe(server)}.json"

    def _pending_file(self, state: str) -> Path:
        return self.root / "pending" / f"{hashlib.sha256(state.encode()).hexdigest()}.json"

    def _write(self, path: Path, model: BaseModel) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        sealed = self._cipher().encrypt(model.model_dump_json())
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"sealed": sealed}, out)
        tmp.replace(path)

    def _read(self, path: Path) -> str | None:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return self._cipher().decrypt(raw["sealed"])

    def get(self, user_id: str, server: str) -> Grant | None:
        """The user's grant for ``server`` (by name), or ``None``."""
        text = self._read(self._file(user_id, server))
        return None if text is None else Grant.model_validate_json(text)

    def put(self, user_id: str, server: str, grant: Grant) -> None:
        """Store (or replace) the user's grant for ``server``."""
        self._write(self._file(user_id, server), grant)

    def delete(self, user_id: str, server: str) -> Grant | None:
        """Forget the user's grant for ``server``; the one there was."""
        grant = self.get(user_id, server)
        self._file(user_id, server).unlink(missing_ok=True)
        return grant

    def holders(self, server: str) -> list[str]:
        """The users (by their file's name) with a grant for a server named ``server``."""
        folder = self.root / "users"
        if not folder.is_dir():
            return []
        name = f"{_safe(server)}.json"
        return sorted(p.name for p in folder.iterdir() if (p / name).exists())

    def add_pending(self, pending: Pending) -> None:
        """Keep a sign-in under way until its callback (or its expiry)."""
        self._sweep()
        self._write(self._pending_file(pending.state), pending)

    def take_pending(self, state: str) -> Pending | None:
        """The sign-in of ``state``, taken once (a second take finds nothing); ``None`` when
        there is none or it expired."""
        path = self._pending_file(state)
        taken = path.with_suffix(f".taken.{os.getpid()}.{time.monotonic_ns()}")
        try:
            path.rename(taken)  # atomic: of two callbacks with one state only one gets it
        except FileNotFoundError:
            return None
        try:
            text = self._read(taken)
        finally:
            taken.unlink(missing_ok=True)
        pending = None if text is None else Pending.model_validate_json(text)
        if pending is None or pending.state != state or pending.expires_at < time.time():
            return None
        return pending

    def _sweep(self) -> None:
        """Remove pending sign-ins past their expiry (by file age: they are sealed)."""
        folder = self.root / "pending"
        if not folder.is_dir():
            return
        cutoff = time.time() - PENDING_TTL_S
        for path in folder.iterdir():
            with contextlib.suppress(OSError):
                if path.stat().st_mtime < cutoff:
                    path.unlink()

    @contextlib.asynccontextmanager
    async def lock(self, user_id: str, server: str) -> AsyncIterator[None]:
        """Hold the grant's lock (other processes too) while refreshing it."""
        path = self._file(user_id, server).with_suffix(".lock")
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + LOCK_TIMEOUT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise TimeoutError("another call is refreshing this sign-in") from None
                    await anyio.sleep(0.05)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock
