"""The plugin's tables made ready, and the files an earlier nyla kept imported once: the
server files of ``NYLA_MCP_DIR`` (one per user, and per mandate under ``mandates/``) and
the sealed sign-ins under ``oauth/users/<user>/<server>.json`` become rows as they are
(their values stay sealed with the same keys); an imported file is renamed
``<name>.json.imported``, so the import runs once and nobody loses a configured server. A
row that exists already (another process imported it, or it was changed since) is kept."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert as pg_insert

from nyla_toolbox_mcp.tables import METADATA
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
    for scope, owner, path in _files(folder):
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
        added += await _insert(db, servers_table, rows)
        _done(path)
    for user, server, path in _grant_files(folder):
        try:
            sealed = json.loads(path.read_text(encoding="utf-8"))["sealed"]
            cipher().decrypt(sealed)
        except Exception as exc:
            log.warning("MCP sign-in file of %s not imported: %s", server, type(exc).__name__)
            continue
        row = {"user_id": user, "server": server, "sealed": sealed}
        added += await _insert(db, grants_table, [row])
        _done(path)
    if added:
        log.info("imported %d MCP servers and sign-ins from %s", added, folder)
    return added


async def _insert(db: Any, table: Any, rows: list[dict[str, Any]]) -> int:
    if not rows:
        return 0
    key = next(iter(table.primary_key.columns))
    statement = pg_insert(table).values(rows).on_conflict_do_nothing().returning(key)
    async with db.session() as s:
        return len((await s.execute(statement)).all())


def _done(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):  # another process imported it meanwhile
        path.rename(path.with_name(path.name + ".imported"))
