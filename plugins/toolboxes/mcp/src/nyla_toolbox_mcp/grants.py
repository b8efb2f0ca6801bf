"""The OAuth sign-ins to MCP servers: per user and server the tokens, the client nyla is
registered as and what was discovered of the authorization server (a *grant*), and the
sign-ins under way (a *pending* one, found by a hash of its ``state``, taken once,
expiring), as rows of the kernel's PostgreSQL: every row holds one ciphertext sealed with
the keys that seal connection tokens, so nothing of a token is readable at rest. A refresh
runs under the grant row's lock (``SELECT ... FOR UPDATE``), so two calls of one user — in
one process or on two machines — never spend the same refresh token."""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import delete, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert

from nyla_toolbox_mcp.tables import grants as grants_table
from nyla_toolbox_mcp.tables import pending as pending_table

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


def state_hash(state: str) -> str:
    """The key of a pending sign-in: not even the key holds its state."""
    return hashlib.sha256(state.encode()).hexdigest()


class LockedGrant:
    """A grant held under its row lock (:meth:`GrantStore.lock`): :attr:`grant` as read
    under the lock, :meth:`save` writing the refreshed one before the lock is released."""

    def __init__(self, session: Any, store: GrantStore, user_id: str, server: str) -> None:
        self._session, self._store = session, store
        self.user_id, self.server = user_id, server
        self.grant: Grant | None = None

    async def save(self, grant: Grant) -> None:
        """Keep ``grant`` (in the locked transaction)."""
        await self._session.execute(self._store.upsert(self.user_id, self.server, grant))
        self.grant = grant


class GrantStore:
    """Grants in ``mcp_grants`` (one row per user and server name), pending sign-ins in
    ``mcp_pending_sign_ins`` (by a hash of their state), in the kernel's database ``db``."""

    def __init__(
        self,
        db: Any,
        cipher: Callable[[], TokenCipher],
        *,
        ready: Callable[[], Awaitable[None]],
    ) -> None:
        self.db = db
        self._cipher = cipher
        self._ready = ready

    def _seal(self, model: BaseModel) -> str:
        return self._cipher().encrypt(model.model_dump_json())

    def _open(self, sealed: str | None) -> Grant | None:
        return None if sealed is None else Grant.model_validate_json(self._cipher().decrypt(sealed))

    def upsert(self, user_id: str, server: str, grant: Grant) -> Any:
        """The statement that stores (or replaces) the user's grant for ``server``."""
        row = {"user_id": user_id, "server": server, "sealed": self._seal(grant)}
        upsert = pg_insert(grants_table).values(**row)
        return upsert.on_conflict_do_update(
            index_elements=["user_id", "server"],
            set_={"sealed": upsert.excluded.sealed, "updated_at": datetime.now(UTC)},
        )

    def _where(self, user_id: str, server: str) -> Any:
        return (grants_table.c.user_id == user_id) & (grants_table.c.server == server)

    async def get(self, user_id: str, server: str) -> Grant | None:
        """The user's grant for ``server`` (by name), or ``None``."""
        await self._ready()
        query = select(grants_table.c.sealed).where(self._where(user_id, server))
        async with self.db.session() as s:
            return self._open((await s.execute(query)).scalar())

    async def put(self, user_id: str, server: str, grant: Grant) -> None:
        """Store (or replace) the user's grant for ``server``."""
        await self._ready()
        async with self.db.session() as s:
            await s.execute(self.upsert(user_id, server, grant))

    async def delete(self, user_id: str, server: str) -> Grant | None:
        """Forget the user's grant for ``server``; the one there was."""
        await self._ready()
        gone = (
            delete(grants_table)
            .where(self._where(user_id, server))
            .returning(grants_table.c.sealed)
        )
        async with self.db.session() as s:
            return self._open((await s.execute(gone)).scalar())

    async def holders(self, server: str) -> list[str]:
        """The users with a grant for a server named ``server``."""
        await self._ready()
        query = (
            select(grants_table.c.user_id)
            .where(grants_table.c.server == server)
            .order_by(grants_table.c.user_id)
        )
        async with self.db.session() as s:
            return list((await s.execute(query)).scalars())

    async def add_pending(self, pending: Pending) -> None:
        """Keep a sign-in under way until its callback (or its expiry)."""
        await self._ready()
        row = {
            "state_hash": state_hash(pending.state),
            "sealed": self._seal(pending),
            "expires_at": datetime.fromtimestamp(pending.expires_at, UTC),
        }
        async with self.db.session() as s:
            await s.execute(delete(pending_table).where(pending_table.c.expires_at < _now()))
            await s.execute(pg_insert(pending_table).values(**row))

    async def take_pending(self, state: str) -> Pending | None:
        """The sign-in of ``state``, taken once (a second take finds nothing, in any
        process); ``None`` when there is none or it expired."""
        await self._ready()
        taken = (
            delete(pending_table)
            .where(pending_table.c.state_hash == state_hash(state))
            .returning(pending_table.c.sealed)
        )
        async with self.db.session() as s:
            sealed = (await s.execute(taken)).scalar()
        if sealed is None:
            return None
        pending = Pending.model_validate_json(self._cipher().decrypt(sealed))
        if pending.state != state or pending.expires_at < time.time():
            return None
        return pending

    @contextlib.asynccontextmanager
    async def lock(self, user_id: str, server: str) -> AsyncIterator[LockedGrant]:
        """Hold the grant's row lock (other processes and machines wait) while refreshing
        it: the grant as read under the lock, saved through :meth:`LockedGrant.save`."""
        await self._ready()
        async with self.db.session() as s:
            # bounded: a call waits at most this long for another's refresh
            await s.execute(text(f"SET LOCAL lock_timeout = '{int(LOCK_TIMEOUT_S * 1000)}ms'"))
            query = (
                select(grants_table.c.sealed).where(self._where(user_id, server)).with_for_update()
            )
            locked = LockedGrant(s, self, user_id, server)
            locked.grant = self._open((await s.execute(query)).scalar())
            yield locked


def _now() -> datetime:
    return datetime.now(UTC)
