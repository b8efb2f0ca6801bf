"""Persistence of agent traces: written once per run in one transaction, read by ``nyla runs``."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from psycopg.types.json import Json
from pydantic_core import to_json
from sqlalchemy import select

from nyla.agent.guard import clean_text
from nyla.agent.tables import RunRow, ToolCallRow
from nyla.models.agent import AgentStatus, AgentTrace, CallRecord, RunContext, ToolCallLog

#: a trace's tool-call rows: a run's records or a trace's models (the same attributes)
CallRows = Sequence[CallRecord | ToolCallLog]


def _t(value: str | None, limit: int | None = None) -> str | None:
    return None if value is None else clean_text(value, limit)


#: the tool-call columns a trace writes, and their types in a binary COPY
CALL_COLUMNS = (
    "run_id",
    "seq",
    "round",
    "call_id",
    "tool_name",
    "arguments",
    "success",
    "error",
    "validation_failure_code",
    "duration_ms",
)
CALL_TYPES = ["text", "int4", "int4", "text", "text", "text", "bool", "text", "text", "float8"]


#: the run row's columns, in the order :func:`save_trace` fills them
RUN_COLUMNS = (
    "run_id",
    "parent_run_id",
    "user_id",
    "status",
    "prompt",
    "final_text",
    "model",
    "rounds",
    "cost_chf",
    "input_tokens",
    "output_tokens",
    "validation_failures",
    "repair_attempts",
    "success_after_repair",
    "error",
    "context",
    "started_at",
    "finished_at",
)
_DELETE_RUN = f"DELETE FROM {RunRow.__tablename__} WHERE run_id = %s"
_INSERT_RUN = (
    f"INSERT INTO {RunRow.__tablename__} ({', '.join(RUN_COLUMNS)})"
    f" VALUES ({', '.join(['%s'] * len(RUN_COLUMNS))})"
)
_COPY_CALLS = (
    f"COPY {ToolCallRow.__tablename__} ({', '.join(CALL_COLUMNS)}) FROM STDIN (FORMAT BINARY)"
)
#: a new run's row and its tool calls in one statement (one round trip, its own transaction):
#: the calls are one JSON array of arrays (each a call's values after ``seq``, in
#: :data:`CALL_COLUMNS` order; ``seq`` is its place); it writes nothing and counts 0 when the
#: run has a row already (then replaced, see below)
_INSERT_NEW = (
    f"WITH run AS ({_INSERT_RUN} ON CONFLICT (run_id) DO NOTHING RETURNING run_id),"
    f" calls AS (INSERT INTO {ToolCallRow.__tablename__} ({', '.join(CALL_COLUMNS)})"
    " SELECT run.run_id, c.n - 1, "
    + ", ".join(f"(c.v->>{i})::{t}" for i, t in enumerate(CALL_TYPES[2:]))
    + " FROM run, json_array_elements(%s::json) WITH ORDINALITY AS c(v, n))"
    " SELECT count(*) FROM run"
)
#: a call's values as its row holds them (after ``run_id`` and ``seq``: a record's attributes
#: are named as the columns)
_CALL_VALUES = attrgetter(*CALL_COLUMNS[2:])
_SURROGATES = re.compile(r"[\ud800-\udfff]")


async def save_trace(db: Any, trace: AgentTrace, calls: CallRows | None = None) -> None:
    """Insert (or replace) the trace of a finished run and its tool calls atomically: the
    calls are ``calls`` (a run passes its :class:`CallRecord` list; its ``trace`` holds no
    ``tool_calls`` model then), else ``trace.tool_calls``. Every
    string is made storable first (NUL bytes and lone surrogates replaced, names and ids cut
    to their column's length), so what a model sent cannot make the record fail.

    A run written for the first time (every run but a reduced or continued one) goes in as
    one statement on a driver connection of the read pool (:meth:`~nyla.db.Database.
    read_driver`, autocommit: the statement is its transaction): the run row and the calls
    as one JSON document, one round trip. Through SQLAlchemy's engine the transaction, the
    row and a COPY of the calls were six round trips and about 2 ms of CPU a run (the ORM's
    unit of work had cost about a millisecond per agent round); the calls as one array per
    column cost the driver's array dumping about 20 us a call. A run that has a row already
    (its trace written again) is replaced in one transaction: delete, insert, COPY of the
    calls. A retry of the statement after a lost connection finds the row and replaces it
    with the same trace."""
    run, rows, stored = _trace_rows(trace, trace.tool_calls if calls is None else calls)
    await db.ensure_ready()
    if stored:  # (every string storable, every duration finite: checked)
        document = to_json(rows).decode()
    else:
        try:
            document = json.dumps(rows, ensure_ascii=False, allow_nan=False)
        except ValueError:  # a duration JSON cannot hold (NaN, infinite): the COPY can
            await _replace_trace(db, run, rows)
            return
    params = [*(run[c] for c in RUN_COLUMNS), document]
    inserted = await db.read_driver(lambda conn: conn.rows(_INSERT_NEW, params))
    if inserted[0][0] == 0:
        await _replace_trace(db, run, rows)


def _trace_rows(
    trace: AgentTrace, calls: CallRows
) -> tuple[dict[str, Any], list[tuple[Any, ...]], bool]:
    """The run row of ``trace`` by column, the rows of its tool ``calls`` (each a call's
    values after ``run_id`` and ``seq``) and whether they are storable as they are."""
    run = {
        "run_id": trace.run_id,
        "parent_run_id": trace.parent_run_id,
        "user_id": trace.context.user_id,
        "status": str(trace.status),
        "prompt": _t(trace.prompt),
        "final_text": _t(trace.final_text),
        "model": _t(trace.model, 255),
        "rounds": trace.rounds,
        "cost_chf": trace.cost_chf,
        "input_tokens": trace.input_tokens,
        "output_tokens": trace.output_tokens,
        "validation_failures": trace.validation_failures,
        "repair_attempts": trace.repair_attempts,
        "success_after_repair": trace.success_after_repair,
        "error": _t(trace.error),
        "context": Json(json.loads(clean_text(json.dumps(trace.context.to_wire())))),
        "started_at": trace.started_at,
        "finished_at": trace.finished_at,
    }
    rows = list(map(_CALL_VALUES, calls))
    if _storable(rows):
        return run, rows, True
    return run, [_cleaned(c) for c in calls], False


def _cleaned(c: CallRecord | ToolCallLog) -> tuple[Any, ...]:
    """A call's values made storable one by one (see :func:`_storable`)."""
    return (
        int(c.round),
        _t(c.call_id, 128),
        _t(c.tool_name, 255),
        _t(c.arguments),
        bool(c.success),
        _t(c.error),
        _t(c.validation_failure_code, 64),
        float(c.duration_ms),
    )


def _storable(rows: list[tuple[Any, ...]]) -> bool:
    """Whether the calls' values are stored as they are just as :func:`_cleaned` would store
    them, and JSON can hold them: each round an ``int`` and each success a ``bool``, every
    duration a finite ``float`` or ``int`` (no subclass), every string within its column's length,
    without NUL bytes or lone surrogates. Checked column by column (a C loop each): a run's
    calls almost always are, and cleaning them one by one cost about 10k instructions a call,
    their JSON by ``json.dumps`` 20k more."""
    if not rows:
        return True
    rounds, ids, names, arguments, successes, errors, codes, durations = zip(*rows, strict=True)
    try:
        if not (
            set(map(type, rounds)) == _INT
            and set(map(type, successes)) == _BOOL
            and set(map(type, durations)) <= _NUMBER
            and set(map(type, errors)) | set(map(type, codes)) <= _OPTIONAL_STR
            and math.isfinite(sum(durations))  # (a NaN or an infinity stays one in the sum)
            and max(map(len, ids)) <= 128
            and max(map(len, names)) <= 255
            and max(map(len, filter(None, codes)), default=0) <= 64
        ):
            return False
        # (a join takes strings only, str subclasses too, which JSON writes as strings)
        texts = "".join([*ids, *names, *arguments, *filter(None, errors), *filter(None, codes)])
    except TypeError:  # a value of another type: cleaned one by one
        return False
    if "\x00" in texts:
        return False
    return texts.isascii() or _SURROGATES.search(texts) is None


_INT, _BOOL, _NUMBER = {int}, {bool}, {float, int}
_OPTIONAL_STR = {str, type(None)}


async def _replace_trace(db: Any, run: dict[str, Any], calls: list[tuple[Any, ...]]) -> None:
    """Replace a run's trace in one transaction (its old tool calls go with its row)."""
    async with db.engine.begin() as conn:
        raw = await conn.get_raw_connection()
        async with raw.driver_connection.cursor() as cur:
            await cur.execute(_DELETE_RUN, (run["run_id"],))
            await cur.execute(_INSERT_RUN, [run[c] for c in RUN_COLUMNS])
            if calls:
                async with cur.copy(_COPY_CALLS) as cp:
                    cp.set_types(CALL_TYPES)
                    for seq, call in enumerate(calls):
                        await cp.write_row((run["run_id"], seq, *call))


def _trace(row: RunRow, calls: list[ToolCallRow]) -> AgentTrace:
    return AgentTrace(
        run_id=row.run_id,
        status=AgentStatus(row.status),
        prompt=row.prompt,
        final_text=row.final_text,
        model=row.model,
        rounds=row.rounds,
        cost_chf=row.cost_chf,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        tool_calls=[
            ToolCallLog(
                round=c.round,
                call_id=c.call_id,
                tool_name=c.tool_name,
                arguments=c.arguments,
                success=c.success,
                error=c.error,
                validation_failure_code=c.validation_failure_code,
                duration_ms=c.duration_ms,
            )
            for c in calls
        ],
        validation_failures=row.validation_failures,
        repair_attempts=row.repair_attempts,
        success_after_repair=row.success_after_repair,
        started_at=row.started_at,
        finished_at=row.finished_at,
        error=row.error,
        parent_run_id=row.parent_run_id,
        context=RunContext.model_validate(row.context or {}),
    )


async def load_trace(db: Any, run_id: str) -> AgentTrace | None:
    """The trace of a run with its tool calls, or ``None``."""
    async with db.session() as s:
        row = await s.get(RunRow, run_id)
        if row is None:
            return None
        calls = (
            await s.scalars(
                select(ToolCallRow).where(ToolCallRow.run_id == run_id).order_by(ToolCallRow.seq)
            )
        ).all()
        return _trace(row, list(calls))


async def list_traces(db: Any, *, user_id: str | None = None, limit: int = 20) -> list[AgentTrace]:
    """The latest runs (newest first) with their tool calls."""
    async with db.session() as s:
        query = select(RunRow).order_by(RunRow.started_at.desc()).limit(limit)
        if user_id is not None:
            query = query.where(RunRow.user_id == user_id)
        rows = (await s.scalars(query)).all()
        calls = (
            await s.scalars(
                select(ToolCallRow)
                .where(ToolCallRow.run_id.in_([r.run_id for r in rows]))
                .order_by(ToolCallRow.run_id, ToolCallRow.seq)
            )
        ).all()
    by_run: dict[str, list[ToolCallRow]] = {}
    for call in calls:
        by_run.setdefault(call.run_id, []).append(call)
    return [_trace(r, by_run.get(r.run_id, [])) for r in rows]
