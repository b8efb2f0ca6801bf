"""Writing the ledger: a batch of rows in one binary COPY, with the release of the holds
they settle, in one transaction on the driver's connection (as the trace is written)."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Json

from nyla.billing.tables import LedgerEntry, SpendingHold

#: the ledger's columns in the order a pending row is copied, and their types
ROW_COLUMNS = (
    "at",
    "user_id",
    "mandate_id",
    "run_id",
    "workflow_id",
    "kind",
    "operation",
    "model",
    "input_tokens",
    "output_tokens",
    "cost_chf",
    "detail",
)
ROW_TYPES = [
    "timestamptz",
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "int4",
    "int4",
    "float8",
    "json",
]
_COPY_ROWS = (
    f"COPY {LedgerEntry.__tablename__} ({', '.join(ROW_COLUMNS)}) FROM STDIN (FORMAT BINARY)"
)
_RELEASE = f"DELETE FROM {SpendingHold.__tablename__} WHERE id = ANY(%s)"


async def write_rows(db: Any, rows: list[dict[str, Any]], holds: list[str]) -> None:
    """Insert ``rows`` (dicts by column) and delete the holds ``holds``, atomically."""
    await db.ensure_ready()
    async with db.engine.begin() as conn:
        raw = await conn.get_raw_connection()
        async with raw.driver_connection.cursor() as cur:
            if rows:
                async with cur.copy(_COPY_ROWS) as copy:
                    copy.set_types(ROW_TYPES)
                    for row in rows:
                        values = [row[c] for c in ROW_COLUMNS]
                        values[-1] = Json(values[-1])
                        await copy.write_row(values)
            if holds:
                await cur.execute(_RELEASE, (holds,))
