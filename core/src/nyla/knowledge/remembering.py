"""Round memory and workflow memory (``kernel.knowledge.memory``); the SQL is in
:mod:`nyla.knowledge.memory`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from nyla.db import Database
from nyla.errors import ModelNotAvailableError
from nyla.knowledge import memory
from nyla.models.agent import RoundToolResult, RunContext
from nyla.models.ai import ModelSpec
from nyla.models.knowledge import WorkflowEntity

if TYPE_CHECKING:
    from nyla.ai.service import AiService

log = logging.getLogger(__name__)


class RoundRecord(NamedTuple):
    """What one agent round leaves in round memory (the round recorder's arguments).

    A named tuple, not a frozen dataclass: one is made every round, and a frozen dataclass
    sets each of its six fields through ``object.__setattr__`` (18.7k -> 11.6k instructions a
    round for :class:`RoundBuffer`'s call, callgrind)."""

    run_id: str
    round: int
    context: RunContext
    file_refs: Sequence[str] = ()
    tool_results: Sequence[RoundToolResult] = ()
    decisions: Sequence[Any] = ()


_new_record = tuple.__new__

#: seconds a :class:`RoundBuffer` holds a round at most: a round recorded later than this
#: after the oldest one held writes what is held first
HOLD_S = 30.0


class RoundBuffer:
    """A run's round recorder that holds the rounds until :meth:`flush` writes them at once
    (one embedding call, one insert). For a run whose context reads no round memory while it
    goes on (no workflow, no cross-workflow hints): writing each round on its own cost about
    4 ms of CPU per round, more than the rest of the round. A round is held at most about
    :data:`HOLD_S` seconds (a long run writes what it holds when a round comes later than
    that), so a process that dies mid-run loses at most that much of its round memory (it is
    optional; the run's trace, written when it ends, is lost with it)."""

    def __init__(self, memory: Memory, hold_s: float = HOLD_S) -> None:
        self.memory = memory
        self.hold_s = hold_s
        self.rounds: list[RoundRecord] = []
        self._since = 0.0

    async def __call__(
        self,
        *,
        run_id: str,
        round: int,
        context: RunContext,
        file_refs: Sequence[str] = (),
        tool_results: Sequence[RoundToolResult] = (),
        decisions: Sequence[Any] = (),
    ) -> None:
        now = time.monotonic()
        if not self.rounds:
            self._since = now
        # (the record made as the named tuple's own _make does, without its Python
        # __new__: 10.8k -> 8.7k instructions a call with one clock read and [*x] copies)
        self.rounds.append(
            _new_record(
                RoundRecord,
                (run_id, round, context, [*file_refs], [*tool_results], [*decisions]),
            )
        )
        if now - self._since >= self.hold_s:
            await self.flush()

    async def flush(self) -> None:
        """Write the rounds held so far (a failure is logged: round memory is optional)."""
        rounds, self.rounds = self.rounds, []
        try:
            await self.memory.record_rounds(rounds)
        except Exception as exc:
            log.warning("round memory of %d rounds not written: %s", len(rounds), exc)


class Memory:
    """What an agent remembers: one row per round (embedded summary, file refs, tool results,
    decisions) and keyed values per workflow."""

    def __init__(
        self,
        db: Database,
        ai: AiService,
        embedding_spec: Callable[[RunContext | None], ModelSpec],
    ) -> None:
        self.db = db
        self.ai = ai
        self.embedding_spec = embedding_spec

    async def record_round(
        self,
        *,
        run_id: str,
        round: int,
        context: RunContext,
        file_refs: Sequence[str] = (),
        tool_results: Sequence[RoundToolResult] = (),
        decisions: Sequence[Any] = (),
    ) -> None:
        """Write the RoundMemory of one agent round. The summary is embedded when possible;
        without an embedding the row is still written (it then only serves "known files")."""
        await self.record_rounds(
            [
                RoundRecord(
                    run_id=run_id,
                    round=round,
                    context=context,
                    file_refs=file_refs,
                    tool_results=tool_results,
                    decisions=decisions,
                )
            ]
        )

    async def record_rounds(self, rounds: Sequence[RoundRecord]) -> None:
        """Write the RoundMemory of several rounds: their summaries embedded in one call per
        embedding model (a summary that recurs, e.g. a tool polled with the same answer,
        once), the rows in one statement."""
        if not rounds:
            return
        summaries = [memory.round_summary(r.file_refs, r.tool_results, r.decisions) for r in rounds]
        vectors: list[tuple[str | None, Sequence[float] | None]] = [(None, None)] * len(rounds)
        by_context: dict[int, list[int]] = {}
        for i, (r, summary) in enumerate(zip(rounds, summaries, strict=True)):
            if summary:
                by_context.setdefault(id(r.context), []).append(i)
        for indexes in by_context.values():
            context = rounds[indexes[0]].context
            try:
                spec = self.embedding_spec(context)
                texts = list(dict.fromkeys(summaries[i] for i in indexes))
                # float32 vectors where the provider gives them (the local model): stored as
                # float4, they need no Python float per value
                used, embedded = await self.ai.embed_rows(texts, context=context, model=spec.id)
                # (each row copies a list vector: a recurring summary's is shared here)
                by_text = dict(zip(texts, ((used, v) for v in embedded), strict=True))
                for i in indexes:
                    vectors[i] = by_text[summaries[i]]
            except Exception as exc:
                level = (
                    logging.DEBUG if isinstance(exc, ModelNotAvailableError) else logging.WARNING
                )
                first = rounds[indexes[0]]
                log.log(
                    level,
                    "round memory of %s/%s stored without embedding: %s",
                    first.run_id,
                    ",".join(str(rounds[i].round) for i in indexes),
                    exc,
                )
        scopes: dict[int, str] = {}  # a run's rounds share their context's scope key
        rows = [
            memory.round_row(
                run_id=r.run_id,
                round=r.round,
                context=r.context,
                file_refs=r.file_refs,
                tool_results=r.tool_results,
                decisions=r.decisions,
                summary=summary,
                model=model,
                vector=vector,
                scope=scopes.get(id(r.context))
                or scopes.setdefault(id(r.context), memory.scope_key(r.context)),
            )
            for r, summary, (model, vector) in zip(rounds, summaries, vectors, strict=True)
        ]
        await memory.insert_rounds(self.db, rows)

    async def remember(
        self,
        key: str,
        value: Any,
        *,
        context: RunContext,
        kind: str = "entity",
        embed: bool = False,
    ) -> None:
        """Store ``key`` = ``value`` in the context's workflow memory (optionally embedded)."""
        model: str | None = None
        vector: list[float] | None = None
        if embed:
            spec = self.embedding_spec(context)
            response = await self.ai.embed([f"{key}: {value}"], context=context, model=spec.id)
            model, vector = response.model, list(response.vectors[0])
        async with self.db.session() as s:
            await memory.put_workflow_value(
                s, context=context, key=key, value=value, kind=kind, model=model, vector=vector
            )

    async def workflow_entities(self, context: RunContext) -> list[WorkflowEntity]:
        """The values stored for the context's workflow."""
        async with self.db.session() as s:
            entries = await memory.workflow_entries(s, context)
        return [WorkflowEntity(key=key, kind=kind, value=value) for key, kind, value in entries]
