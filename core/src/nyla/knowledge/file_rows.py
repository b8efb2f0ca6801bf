"""The file details a search's hits show, kept in this process between searches.

A search ranks on the chunk table alone: every condition that decides what a caller may
read (the owner key, the model, the filters) is on the chunk rows, so the ranking needs no
file row. What a hit shows of its file (id, name, content hash, path, connection, web
address) is looked up here by the file's number (the chunk id's high bits) and read from
the database only for the numbers this process does not hold. Joining the ten hits' file
rows in the ranking statement cost 80-110 µs of server CPU a search (measured on 10k files,
statement by statement, interleaved), as much as nyla's whole remaining overhead.

Nothing here decides access: a file row that changed only changes what a hit shows. It is
still never shown stale. A statement trigger on the file index (:data:`TRIGGER`) notifies
:data:`CHANNEL` when rows are updated, deleted or truncated, and every read connection that
searches with these rows listens on it. PostgreSQL delivers a committed notification to an
idle listener at once and to a busy one before its next statement's end, so the ranking's
results reach this process after the notifications of every commit the ranking saw; each
clears the held rows (and any lookup under way keeps what it read to itself). A connection
starting to listen clears them too (commits before it were not sent to it). New files need
no notice here (a file number is never reused), but the trigger notifies inserts too
(payload ``INSERT``): every notification, and every connection starting to listen, is
passed on to ``on_change`` (the search's candidate counts,
:class:`~nyla.knowledge.search_plan.EstimateCache`).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import psycopg
from psycopg import Notify
from sqlalchemy import text

from nyla.db import Database
from nyla.knowledge.vectors import CHUNK_ID_BITS
from nyla.read_pool import ReadConnection

log = logging.getLogger(__name__)

#: the notification channel of changed file index rows
CHANNEL = "nyla_knowledge_files"
#: the trigger (and its function) that notifies :data:`CHANNEL`
TRIGGER = "nyla_knowledge_files_changed"
#: numbers each :class:`FileRows` (its mark on the connections that listen for it)
_INSTANCES = itertools.count(1)
#: file numbers held at most (each ~0.5 kB: about 8 MB when full)
MAX_FILES = 16_384
#: the share of searches whose hits' files were all held, at or above which a search ranks
#: the chunks alone and reads what is missing afterwards; below it the ranking joins its
#: files itself. A second statement for the missing files costs about four times what the
#: join adds to the ranking (0.3-0.45 ms against 0.08-0.11 ms a search), so the join pays
#: once more than a quarter of the searches would need that statement.
HOLDING_PAYS = 0.75
#: the weight of the latest search in that share (an exponential average: about the last
#: sixteen searches count)
_LATEST = 1 / 16

#: (file id, name, content hash, source path, connection id, web address)
FileDetails = tuple[str, str, str, str | None, str | None, str | None]

_DETAILS_SQL = (
    "SELECT file_no, file_id, name, content_hash, source_path, connection_id, web_url "
    "FROM knowledge_file_index WHERE file_no = ANY(%(nos)s)"
)
#: the trigger as this version makes it (an earlier one did not fire on INSERT: tgtype bit 4)
_TRIGGER_EXISTS = (
    "SELECT 1 FROM pg_trigger WHERE tgname = :name AND tgtype & 4 <> 0 "
    "AND tgrelid = to_regclass(format('%I.%I', current_schema(), 'knowledge_file_index'))"
)


class FileRows:
    """File details by file number, valid while :attr:`enabled` (the change trigger exists
    and each connection listens before its rows are used; see the module)."""

    def __init__(self, size: int = MAX_FILES, on_change: Callable[[], None] | None = None) -> None:
        self.size = size
        self._on_change = on_change
        #: False until :meth:`ensure_trigger` made sure changes are notified
        self.enabled = False
        self._rows: dict[int, FileDetails] = {}
        # bumped by every notification: a lookup read before it keeps its rows to itself
        self._generation = 0
        # what a connection's info notes once it listens for this instance (never reused,
        # unlike id(): a connection must never take a new instance for an old one)
        self._mark = f"nyla_file_rows:{next(_INSTANCES)}"
        # of the latest searches, the share whose hits' files were all held
        self._held_share = 1.0

    @property
    def generation(self) -> int:
        """Bumped by every change notified: details read by a statement that started
        before the current generation are not kept."""
        return self._generation

    def worth_holding(self) -> bool:
        """Whether the next search should rank its chunks alone (most of the latest found
        their files held) rather than join its files (:data:`HOLDING_PAYS`)."""
        return self._held_share >= HOLDING_PAYS

    def note(self, all_held: bool) -> None:
        """Count one search: whether every file of its hits was held before it ran."""
        self._held_share += _LATEST * (all_held - self._held_share)

    def joined(self, rows: list[Any], generation: int) -> tuple[list[Any], dict[int, FileDetails]]:
        """Split the rows of a ranking joined to its files (the lean columns, then
        :data:`FileDetails`) into the lean rows and the details by file number; noted as
        one search (:meth:`note`) and the details kept when no change was notified since
        ``generation`` (read before the statement ran)."""
        held = self._rows
        chunks: list[Any] = []
        details: dict[int, FileDetails] = {}
        all_held = True
        for row in rows:
            no = row[0] >> CHUNK_ID_BITS
            if all_held and no not in held:
                all_held = False
            details[no] = row[6:]
            chunks.append(row[:6])
        self.note(all_held)
        if generation == self._generation:
            self._keep(details)
        return chunks, details

    def invalidate(self, _notify: Notify | None = None) -> None:
        """Forget every held row (a file index row changed, or a connection started
        listening)."""
        self._rows.clear()
        self._generation += 1

    def _notified(self, notify: Notify | None = None) -> None:
        """A file index change was notified (or a connection started listening)."""
        if notify is None or notify.payload != "INSERT":
            self.invalidate()
        if self._on_change is not None:
            self._on_change()

    async def ensure_trigger(self, db: Database) -> None:
        """Create the change trigger if it is missing (once per service). Where it cannot be
        created (a role that does not own the table) the rows are never held: every search
        joins its files in its ranking statement instead."""
        if self.enabled:
            return
        try:
            async with db.session() as s:
                if (await s.execute(text(_TRIGGER_EXISTS), {"name": TRIGGER})).first() is None:
                    # two processes creating it race in the catalog: one at a time
                    await s.execute(
                        text("SELECT pg_advisory_xact_lock(hashtext('nyla.file-rows'))")
                    )
                    if (await s.execute(text(_TRIGGER_EXISTS), {"name": TRIGGER})).first() is None:
                        await _create_trigger(s)
        except Exception as exc:  # the search itself must not fail on it
            log.warning("file details are read with every search (no change trigger): %s", exc)
            return
        self.enabled = True

    def rows(self) -> Mapping[int, FileDetails]:
        """The held details by file number (to read at once, before the next ``await``:
        a notification clears them)."""
        return self._rows

    async def details(
        self, conn: ReadConnection, file_nos: Iterable[int]
    ) -> dict[int, FileDetails]:
        """The details of ``file_nos`` (files deleted meanwhile are missing), read from the
        database for those not held."""
        rows = self._rows
        found: dict[int, FileDetails] = {}
        missing: list[int] = []
        for no in file_nos:
            held = rows.get(no)
            if held is None:
                missing.append(no)
            else:
                found[no] = held
        if missing:
            generation = self._generation
            read = {r[0]: tuple(r[1:]) for r in await conn.rows(_DETAILS_SQL, {"nos": missing})}
            found.update(read)  # type: ignore[arg-type]
            if generation == self._generation:
                self._keep(read)  # type: ignore[arg-type]
        return found

    def listening(self, conn: ReadConnection) -> bool:
        """Whether ``conn`` listens for changed file rows already (:meth:`listen`)."""
        return self._mark in conn.info

    async def listen(self, conn: ReadConnection) -> bool:
        """Make ``conn`` listen for changed file rows (once per connection). False, and
        no rows held from then on, where the server refuses (a standby in recovery)."""
        if self._mark in conn.info:
            return True
        try:
            await conn.driver.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error as exc:
            log.warning("file details are read with every search (LISTEN failed): %s", exc)
            self.enabled = False
            self.invalidate()
            return False
        conn.driver.add_notify_handler(self._notified)
        conn.info[self._mark] = True
        self._notified()
        return True

    def _keep(self, read: dict[int, FileDetails]) -> None:
        rows = self._rows
        for no, details in read.items():
            rows.pop(no, None)
            rows[no] = details
        while len(rows) > self.size:
            del rows[next(iter(rows))]


async def _create_trigger(session: Any) -> None:
    """The statement trigger on the file index that notifies :data:`CHANNEL`."""
    await session.execute(
        text(
            f"CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$BEGIN PERFORM pg_notify('{CHANNEL}', TG_OP); RETURN NULL; END$$"
        )
    )
    await session.execute(text(f"DROP TRIGGER IF EXISTS {TRIGGER} ON knowledge_file_index"))
    await session.execute(
        text(
            f"CREATE TRIGGER {TRIGGER} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
            f"ON knowledge_file_index FOR EACH STATEMENT EXECUTE FUNCTION {TRIGGER}()"
        )
    )
