"""Writing the ledger: a batch of rows with the release of the holds they settle, in one
statement on the driver's connection (as the trace is written)."""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

from nyla.billing.tables import LedgerEntry, SpendingHold

#: the ledger's columns in the order a pending row is written, and their types
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
#: the rows (one JSON document) and the release of their holds in one statement: one round
#: trip, its own transaction
_WRITE = (
    f"WITH released AS (DELETE FROM {SpendingHold.__tablename__} WHERE id = ANY(%s::text[])),"
    f" written AS (INSERT INTO {LedgerEntry.__tablename__} ({', '.join(ROW_COLUMNS)})"
    # (a detail of None is stored as JSON null: the column takes no SQL NULL)
    f" SELECT {', '.join(ROW_COLUMNS[:-1])}, coalesce(detail, 'null'::json)"
    " FROM json_to_recordset(%s::json) AS r("
    + ", ".join(f"{c} {t}" for c, t in zip(ROW_COLUMNS, ROW_TYPES, strict=True))
    + ") RETURNING 1) SELECT count(*) FROM written"
)


async def write_rows(db: Any, rows: list[dict[str, Any]], holds: list[str]) -> None:
    """Insert ``rows`` (dicts by column) and delete the holds ``holds``, atomically: one
    statement on a driver connection of the read pool (autocommit: the statement is its
    transaction), the rows as one JSON document. Through SQLAlchemy's engine the
    transaction and a binary COPY were four round trips and about 1.5 ms of CPU a run's
    close (SQLAlchemy's statement building had cost about 3 ms); the rows as one array per
    column cost the driver's array dumping about 25 us a row. Like a write that failed
    before (its rows wait for the next batch), a statement sent again after a lost
    connection may have been applied once already."""
    if not rows and not holds:
        return
    document = json.dumps(
        [{c: _storable(row[c]) for c in ROW_COLUMNS} for row in rows], default=_json_value
    )
    await db.ensure_ready()
    await db.read_driver(lambda conn: conn.rows(_WRITE, (list(holds), document)))


def _storable(value: Any) -> Any:
    """``value`` as JSON can carry it to its column: a float that is not finite as the text
    PostgreSQL reads as that float."""
    if type(value) is float and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not a ledger value")
