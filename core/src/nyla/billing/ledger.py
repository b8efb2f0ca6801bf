"""Writing the ledger: a batch of rows with the release of the holds they settle, in one
statement on the driver's connection (as the trace is written)."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

from pydantic_core import to_json

from nyla.billing.tables import LedgerEntry, SpendingHold

#: the ledger's columns in the order a pending row holds its values, and their types
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
#: the rows (one JSON array of arrays, each a row's values in :data:`ROW_COLUMNS` order) and
#: the release of their holds in one statement: one round trip, its own transaction
_WRITE = (
    f"WITH released AS (DELETE FROM {SpendingHold.__tablename__} WHERE id = ANY(%s::text[])),"
    f" written AS (INSERT INTO {LedgerEntry.__tablename__} ({', '.join(ROW_COLUMNS)})"
    " SELECT "
    + ", ".join(f"(r.v->>{i})::{t}" for i, t in enumerate(ROW_TYPES[:-1]))
    # (the detail as its JSON text; a detail of None is stored as JSON null: the column
    # takes no SQL NULL)
    + f", coalesce(r.v->{len(ROW_TYPES) - 1}, 'null'::json)"
    " FROM json_array_elements(%s::json) AS r(v) RETURNING 1) SELECT count(*) FROM written"
)

Row = tuple[Any, ...]


async def write_rows(db: Any, rows: list[Row], holds: list[str]) -> None:
    """Insert ``rows`` (each its values in :data:`ROW_COLUMNS` order) and delete the holds
    ``holds``, atomically: one statement on a driver connection of the read pool
    (autocommit: the statement is its transaction), the rows as one JSON document. Through
    SQLAlchemy's engine the transaction and a binary COPY were four round trips and about
    1.5 ms of CPU a run's close (SQLAlchemy's statement building had cost about 3 ms); the
    rows as one array per column cost the driver's array dumping about 25 us a row. Like a
    write that failed before (its rows wait for the next batch), a statement sent again
    after a lost connection may have been applied once already."""
    if not rows and not holds:
        return
    if _plain(rows):
        document = to_json(rows).decode()
    else:
        document = json.dumps([list(map(_storable, row)) for row in rows], default=_json_value)
    await db.ensure_ready()
    await db.read_driver(lambda conn: conn.rows(_WRITE, (list(holds), document)))


def _plain(rows: list[Row]) -> bool:
    """Whether pydantic-core's encoder writes ``rows`` as :func:`_storable` and ``json.dumps``
    would, to the same stored values: each time a ``datetime`` in UTC, each id a ``str`` or
    ``None``, the kind, operation and model ``str``, the tokens ``int``, each cost a finite
    ``float`` or ``int``, each detail empty (``{}`` or ``None``: a detail's JSON text is
    stored as written, and the two encoders space and escape it differently), no string with
    a NUL or a lone surrogate. Checked column by column (a C loop each): a run's rows almost
    always are, and each value through :func:`_storable` and ``json.dumps`` cost about 55k
    instructions a row."""
    if not rows:
        return True
    try:
        columns = tuple(zip(*rows, strict=True))  # (ValueError: rows of unequal lengths)
    except ValueError:
        return False
    if len(columns) != len(ROW_COLUMNS):
        return False
    at, costs, details = columns[0], columns[10], columns[11]
    ids = columns[1] + columns[2] + columns[3] + columns[4]
    names = columns[5] + columns[6] + columns[7]
    try:
        if not (
            set(map(type, at)) == _TIME
            and set(map(_ZONE, at)) == _UTC
            and set(map(type, ids)) <= _OPTIONAL_STR
            and set(map(type, names)) == _STR
            and set(map(type, columns[8] + columns[9])) == _INT
            and set(map(type, costs)) <= _NUMBER
            and set(map(type, details)) <= _DETAIL
            and not any(details)
            and math.isfinite(sum(costs))  # (a NaN or an infinity stays one in the sum)
        ):
            return False
    except OverflowError:  # (an int cost too large for a float)
        return False
    texts = "".join([*filter(None, ids), *names])
    if "\x00" in texts:
        return False
    return texts.isascii() or _SURROGATES.search(texts) is None


_TIME, _UTC, _STR, _INT = {datetime}, {UTC}, {str}, {int}
_ZONE = attrgetter("tzinfo")
_OPTIONAL_STR = {str, type(None)}
_NUMBER = {float, int}
_DETAIL = {dict, type(None)}
_SURROGATES = re.compile(r"[\ud800-\udfff]")


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
