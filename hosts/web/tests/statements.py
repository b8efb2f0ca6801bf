"""Every statement this process sends to PostgreSQL, recorded at psycopg (both of the
kernel's ways in: SQLAlchemy's sessions and the driver pools), with the task that sent it:
a test pins how many statements a request costs, a count that does not depend on timing."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from psycopg import _connection_base, _cursor_base


@dataclass(frozen=True)
class Statement:
    """One statement sent: ``kind`` is ``query`` (a cursor's, prepared or not), ``prepare``
    (the round trip that prepares one) or ``command`` (BEGIN, COMMIT, ROLLBACK, LISTEN...)."""

    kind: str
    sql: str
    task: asyncio.Task[Any] | None

    @property
    def verb(self) -> str:
        """``BEGIN``, ``COMMIT``, ``ROLLBACK`` or ``QUERY`` (any other statement)."""
        head = self.sql.split(None, 1)[0].upper() if self.sql.strip() else ""
        return head if head in ("BEGIN", "COMMIT", "ROLLBACK") else "QUERY"


@dataclass
class Recording:
    """The statements sent while :func:`recording` was open, in order."""

    statements: list[Statement] = field(default_factory=list)

    def of(self, task: asyncio.Task[Any] | None) -> list[Statement]:
        """The statements ``task`` sent."""
        return [s for s in self.statements if s.task is task and s.kind != "prepare"]

    def counts(self, statements: list[Statement] | None = None) -> dict[str, int]:
        """How many of each verb (prepares left out: they ride with their query's first use)."""
        out: dict[str, int] = {}
        for s in self.statements if statements is None else statements:
            if s.kind != "prepare":
                out[s.verb] = out.get(s.verb, 0) + 1
        return out


def _text(query: Any) -> str:
    raw = getattr(query, "query", query)
    if isinstance(raw, bytes):
        return raw.decode(errors="replace")
    return str(raw)


def _current() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    """Record the statements psycopg sends (any connection of this process) until closed."""
    rec = Recording()
    conn_cls, cur_cls = _connection_base.BaseConnection, _cursor_base.BaseCursor
    originals = (conn_cls._exec_command, cur_cls._execute_send, cur_cls._send_query_prepared)
    prepare = cur_cls._send_prepare

    def exec_command(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        sql = command if isinstance(command, (bytes, str)) else getattr(command, "_obj", command)
        rec.statements.append(Statement("command", _text(sql), _current()))
        return originals[0](self, command, *args, **kwargs)

    def execute_send(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        rec.statements.append(Statement("query", _text(query), _current()))
        return originals[1](self, query, *args, **kwargs)

    def query_prepared(self: Any, name: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        rec.statements.append(Statement("query", _text(query), _current()))
        return originals[2](self, name, query, *args, **kwargs)

    def send_prepare(self: Any, name: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        rec.statements.append(Statement("prepare", _text(query), _current()))
        return prepare(self, name, query, *args, **kwargs)

    conn_cls._exec_command = exec_command  # type: ignore[method-assign]
    cur_cls._execute_send = execute_send  # type: ignore[method-assign]
    cur_cls._send_query_prepared = query_prepared  # type: ignore[method-assign]
    cur_cls._send_prepare = send_prepare  # type: ignore[method-assign]
    try:
        yield rec
    finally:
        conn_cls._exec_command = originals[0]  # type: ignore[method-assign]
        cur_cls._execute_send, cur_cls._send_query_prepared = originals[1:]  # type: ignore[method-assign]
        cur_cls._send_prepare = prepare  # type: ignore[method-assign]
