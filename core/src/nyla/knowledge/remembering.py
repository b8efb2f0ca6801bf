"""Round memory and workflow memory (``kernel.knowledge.memory``); the SQL is in
:mod:`nyla.knowledge.memory`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from nyla.db import Database
from nyla.errors import ModelNotAvailableError
from nyla.knowledge import memory
from nyla.models.agent import RunContext
from nyla.models.ai import ModelSpec
from nyla.models.knowledge import WorkflowEntity

if TYPE_CHECKING:
    from nyla.ai.service import AiService

log = logging.getLogger(__name__)


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
        tool_results: Sequence[Any] = (),
        decisions: Sequence[Any] = (),
    ) -> None:
        """Write the RoundMemory of one agent round. The summary is embedded when possible;
        without an embedding the row is still written (it then only serves "known files")."""
        summary = memory.round_summary(file_refs, tool_results, decisions)
        model: str | None = None
        vector: list[float] | None = None
        if summary:
            try:
                spec = self.embedding_spec(context)
                response = await self.ai.embed([summary], context=context, model=spec.id)
                model, vector = response.model, list(response.vectors[0])
            except Exception as exc:
                level = (
                    logging.DEBUG if isinstance(exc, ModelNotAvailableError) else logging.WARNING
                )
                log.log(
                    level, "round memory of %s/%s stored without embedding: %s", run_id, round, exc
                )
        async with self.db.session() as s:
            await memory.insert_round(
                s,
                run_id=run_id,
                round=round,
                context=context,
                file_refs=file_refs,
                tool_results=tool_results,
                decisions=decisions,
                summary=summary,
                model=model,
                vector=vector,
            )

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
