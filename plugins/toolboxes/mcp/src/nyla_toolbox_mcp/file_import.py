"""The plugin's tables made ready, and the files an earlier nyla kept imported once: the
server files of ``NYLA_MCP_DIR`` (one per user, and per mandate under ``mandates/``) and
the sealed sign-ins under ``oauth/users/<user>/<server>.json`` become rows as they are
(their values stay sealed with the same keys), so nobody loses a configured server. The
database records each file it imported (``mcp_imported_files``, by path, in the same
transaction as its rows), so a file is imported once per database and left as it is (a
test's database never moves a person's files). A row that exists already (another process
imported it, or it was changed since) is kept."""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert

from nyla_toolbox_mcp.tables import METADATA, imported_files
from nyla_toolbox_mcp.tables import grants as grants_table
from nyla_toolbox_mcp.tables import servers as servers_table

if TYPE_CHECKING:
    from nyla.sdk import TokenCipher

log = logging.getLogger(__name__)

#: the databases whose tables exist, and the folders imported into each
_READY: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
#: one lock per event loop (a command runs its own loop; an asyncio lock belongs to one)
_LOCKS: dict[int, asyncio.Lock] = {}


async def ensure_ready(db: Any, folder: Path, cipher: Callable[[], TokenCipher]) -> None:
    """Create the plugin's tables in ``db``'s schema and import ``folder`` (once each per
    process)."""
    done = _READY.get(db)
    if done is not None and str(folder) in done:
        return
    lock = _LOCKS.setdefault(id(asyncio.get_running_loop()), asyncio.Lock())
    async with lock:
        done = _READY.get(db)
        if done is None:
            await _create_tables(db)
            done = _READY[db] = set()
        if str(folder) not in done:
            await import_files(db, folder, cipher)
            done.add(str(folder))


async def _create_tables(db: Any) -> None:
    await db.ensure_ready()
    async with db.engine.begin() as conn:
        # processes started together on a fresh database take turns creating the tables
        await conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('nyla_toolbox_mcp'))"))
        if db.schema:  # in the database's own schema, never a shadow in public
            conn = await conn.execution_options(schema_translate_map={None: db.schema})
        await conn.run_sync(METADATA.create_all)


def _files(folder: Path) -> list[tuple[str, str, Path]]:
    """``(scope, owner, file)`` of every server file not imported yet."""
    found = []
    for scope, where in (("user", folder), ("mandate", folder / "mandates")):
        if where.is_dir():
            found += [(scope, p.stem, p) for p in sorted(where.glob("*.json"))]
    return found


def _grant_files(folder: Path) -> list[tuple[str, str, Path]]:
    """``(user, server, file)`` of every sign-in file not imported yet."""
    users = folder / "oauth" / "users"
    if not users.is_dir():
        return []
    return [
        (user.name, path.stem, path)
        for user in sorted(users.iterdir())
        if user.is_dir()
        for path in sorted(user.glob("*.json"))
    ]


async def import_files(db: Any, folder: Path, cipher: Callable[[], TokenCipher]) -> int:
    """Import the server and sign-in files under ``folder``; how many rows were added. A
    file that cannot be read is logged and left where it is."""
    from nyla_toolbox_mcp.servers import open_server

    added = 0
    done = await _imported(db)
    for scope, owner, path in (f for f in _files(folder) if str(f[2].resolve()) not in done):
        try:
            configs = json.loads(path.read_text(encoding="utf-8"))
            for config in configs:
                open_server(config, cipher())  # refuse what the keys cannot open
            rows = [
                {"owner_scope": scope, "owner_id": owner, "name": c["name"], "config": c}
                for c in configs
            ]
        except Exception as exc:
            log.warning("MCP server file %s not imported: %s", path.name, type(exc).__name__)
            continue
        added += await _insert(db, servers_table, rows, path)
    for user, server, path in (f for f in _grant_files(folder) if str(f[2].resolve()) not in done):
        try:
            sealed = json.loads(path.read_text(encoding="utf-8"))["sealed"]
            cipher().decrypt(sealed)
        except Exception as exc:
            log.warning("MCP sign-in file of %s not imported: %s", server, type(exc).__name__)
            continue
        row = {"user_id": user, "server": server, "sealed": sealed}
        added += await _insert(db, grants_table, [row], path)
    if added:
        log.info("imported %d MCP servers and sign-ins from %s", added, folder)
    return added


async def _imported(db: Any) -> set[str]:
    """The paths of the files this database imported already."""
    async with db.session() as s:
        return set((await s.execute(select(imported_files.c.path))).scalars())


async def _insert(db: Any, table: Any, rows: list[dict[str, Any]], path: Path) -> int:
    """Add ``rows`` (keeping rows that exist) and record ``path`` as imported, at once."""
    key = next(iter(table.primary_key.columns))
    done = pg_insert(imported_files).values(path=str(path.resolve())).on_conflict_do_nothing()
    added = 0
    async with db.session() as s:
        if rows:
            statement = pg_insert(table).values(rows).on_conflict_do_nothing().returning(key)
            added = len((await s.execute(statement)).all())
        await s.execute(done)
    return added
