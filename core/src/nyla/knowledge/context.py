"""``build_agent_context``: the RAG block injected before each agent round.

Six layers in the seeds' order, each with its own token budget, deduplicated across layers:

1. known files (file refs from this workflow's round memory)
2. relevant knowledge: semantic search over the instance, personal, mandate and global scopes
3. earlier rounds of this workflow, by similarity (round memory)
4. workflow entities (workflow memory)
5. shared mandate knowledge (mandate scope only)
6. optional cross-workflow hints (similar rounds of the user's other workflows)

Failure is never fatal (invariant 6): when the prompt cannot be embedded, or the database
fails, the result is an empty string and the agent runs without the block.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from nyla.ai.tokens import count_text_tokens
from nyla.errors import ModelNotAvailableError
from nyla.knowledge import memory
from nyla.knowledge.chunking import content_hash
from nyla.models.agent import RunContext
from nyla.models.files import Scope
from nyla.models.knowledge import SearchQuery

if TYPE_CHECKING:
    from collections.abc import Callable

    from nyla.ai.neutralize import NeutralizationSession
    from nyla.db import Database
    from nyla.knowledge.changes import KnowledgeChanges
    from nyla.knowledge.settings import KnowledgeSettings
    from nyla.models.ai import ModelSpec
    from nyla.models.knowledge import SearchHit, SearchResult

log = logging.getLogger(__name__)


class ContextSource(Protocol):
    """What the context builder reads of the knowledge service
    (:class:`~nyla.knowledge.retrieval.Retrieval` is one): its AI service, database, settings
    and search."""

    @property
    def ai(self) -> Any: ...

    @property
    def db(self) -> Database: ...

    @property
    def settings(self) -> KnowledgeSettings: ...

    @property
    def embedding_spec(self) -> Callable[[RunContext | None], ModelSpec]: ...

    async def search(self, query: SearchQuery) -> SearchResult: ...


LAYER_TITLES = (
    "Known files",
    "Relevant knowledge",
    "Earlier in this workflow",
    "Workflow entities",
    "Shared mandate knowledge",
    "Hints from other workflows",
)

#: a layer line longer than this many characters is cut (the budget still applies)
MAX_LINE_CHARS = 1600


@dataclass
class _Layer:
    title: str
    budget: int
    lines: list[str] = field(default_factory=list)
    used: int = 0

    def add(self, line: str) -> bool:
        """Add ``line`` if it fits the budget (a first line is cut to fit); False when full."""
        line = " ".join(line.split()) if "\n" not in line else line.strip()
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + " …"
        cost = count_text_tokens(line)
        if self.used + cost > self.budget:
            if self.lines or self.budget <= 0:
                return False
            line = line[: max(0, self.budget * 3)] + " …"
            cost = count_text_tokens(line)
        self.lines.append(line)
        self.used += cost
        return True

    def render(self) -> str:
        return f"### {self.title}\n" + "\n".join(self.lines)


class _Seen:
    """Dedupe across layers by chunk id and by normalized text."""

    def __init__(self) -> None:
        self.ids: set[int] = set()
        self.hashes: set[str] = set()

    def fresh(self, text: str, chunk_id: int | None = None) -> bool:
        h = content_hash(text)
        if (chunk_id is not None and chunk_id in self.ids) or h in self.hashes:
            return False
        if chunk_id is not None:
            self.ids.add(chunk_id)
        self.hashes.add(h)
        return True


#: a run's prompt vectors by (embedding model asked for, prompt): the model and the vector
PromptVectors = dict[tuple[str, str], tuple[str, list[float]]]


async def build_agent_context(
    service: ContextSource,
    prompt: str,
    context: RunContext,
    *,
    used: list[SearchHit] | None = None,
    vectors: PromptVectors | None = None,
    costs: list[float] | None = None,
    spec: ModelSpec | None = None,
    neutralization: NeutralizationSession | None = None,
) -> str:
    """The formatted RAG block for ``prompt`` (empty string when there is nothing or when
    embedding or the database fails). The knowledge hits the block quotes are appended to
    ``used`` (what an answer cites). ``vectors`` keeps the prompt's vector for the next
    call of the same run (same context): the agent asks with the same prompt every round.
    The cost of embedding the prompt goes to ``costs`` (the run is charged with it).
    ``spec``: the embedding model already chosen for ``context`` (else chosen here).
    ``neutralization``: the run's placeholder session, which the prompt's embedding goes
    through (its placeholders are then the run's, and the run's first model call finds the
    prompt neutralized already)."""
    try:
        spec = spec or service.embedding_spec(context)
        known = vectors.get((spec.id, prompt)) if vectors is not None else None
        if known is None:
            response = await service.ai.embed(
                [prompt], context=context, model=spec.id, neutralization=neutralization
            )
            if costs is not None:
                costs.append(response.cost_chf)
            known = (response.model, list(response.vectors[0]))
            if vectors is not None:
                vectors[(spec.id, prompt)] = known
        model, vector = known
        dims = len(vector)
    except Exception as exc:
        # no embedding model configured is a normal setup, not worth a warning every round
        level = logging.DEBUG if isinstance(exc, ModelNotAvailableError) else logging.WARNING
        log.log(level, "RAG context skipped: the prompt could not be embedded: %s", exc)
        return ""
    try:
        layers = await _layers(service, prompt, context, model, dims, vector, used)
    except Exception as exc:
        log.warning("RAG context skipped: %s: %s", type(exc).__name__, exc)
        return ""
    blocks = [layer.render() for layer in layers if layer.lines]
    if not blocks:
        return ""
    return "## Knowledge context\n\n" + "\n\n".join(blocks)


async def _layers(
    service: ContextSource,
    prompt: str,
    context: RunContext,
    model: str,
    dims: int,
    vector: list[float],
    used: list[SearchHit] | None,
) -> list[_Layer]:
    budgets = service.settings.budgets
    k = service.settings.context_k
    seen = _Seen()
    known = _Layer(LAYER_TITLES[0], budgets.known_files)
    semantic = _Layer(LAYER_TITLES[1], budgets.semantic)
    rounds = _Layer(LAYER_TITLES[2], budgets.round_memory)
    entities = _Layer(LAYER_TITLES[3], budgets.workflow_entities)
    shared = _Layer(LAYER_TITLES[4], budgets.mandate_shared)
    hints = _Layer(LAYER_TITLES[5], budgets.cross_workflow)

    workflow = bool(context.workflow_id)  # (without one, no memory layer has a row to read)
    if workflow:
        async with service.db.read_session() as s:
            for ref in await memory.known_files(s, context):
                if seen.fresh(f"file:{ref}") and not known.add(f"- {ref}"):
                    break
    query = SearchQuery(
        text=prompt,
        vector=vector,
        model=model,
        context=context,
        scopes=[Scope.FEATURE_INSTANCE, Scope.PERSONAL, Scope.MANDATE, Scope.GLOBAL],
        k=k,
    )
    result = await service.search(query)
    for hit in result.hits:
        if seen.fresh(hit.text, hit.chunk_id):
            line = f"[{hit.file_name} · {hit.context_ref} · {hit.scope}] {hit.text}"
            if not semantic.add(line):
                break
            if used is not None:
                used.append(hit)
    if workflow:
        async with service.db.read_session() as s:
            for summary, _distance, _wf in await memory.search_rounds(
                s, context, model=model, dims=dims, vector=vector, k=4
            ):
                if summary and seen.fresh(summary) and not rounds.add(summary):
                    break
            for key, kind, value in await memory.workflow_entries(s, context):
                rendered = (
                    value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                )
                if seen.fresh(f"{key}={rendered}") and not entities.add(
                    f"- {key} ({kind}): {rendered}"
                ):
                    break
    if context.mandate_id:
        shared_result = await service.search(replace(query, scopes=[Scope.MANDATE], k=k * 2))
        for hit in shared_result.hits:
            line = f"[{hit.file_name} · {hit.context_ref}] {hit.text}"
            if seen.fresh(hit.text, hit.chunk_id):
                if not shared.add(line):
                    break
                if used is not None:
                    used.append(hit)
    if service.settings.cross_workflow_hints:
        async with service.db.read_session() as s:
            for summary, _d, wf in await memory.search_rounds(
                s, context, model=model, dims=dims, vector=vector, k=3, same_workflow=False
            ):
                if (
                    summary
                    and seen.fresh(summary)
                    and not hints.add(f"({wf or 'no workflow'}) {summary}")
                ):
                    break
    return [known, semantic, rounds, entities, shared, hints]


class AgentContextBuilder:
    """The context builder of one agent run: ``await builder(prompt, context)`` is the block
    of :func:`build_agent_context`, with the run's prompt embedded once.

    For a context whose block reads no round or workflow memory (no workflow, no
    cross-workflow hints), the block depends on the prompt and the stored knowledge alone, so
    it is built again only when the knowledge changed since the last build, not every round:
    ``changes`` (:class:`~nyla.knowledge.changes.KnowledgeChanges`) says so without a
    database round trip while this process listens for changes; otherwise (not listening,
    or ``changes`` is ``None``) the database's WAL position is read every round and any
    write anywhere counts. An empty block (nothing found, or a failure) is never kept.
    Without either (a standby that refuses to notify) it builds every time, as it does for a
    context with a workflow. ``neutralization``: the run's placeholder session (see
    :func:`build_agent_context`)."""

    def __init__(
        self,
        service: ContextSource,
        used: list[SearchHit],
        changes: KnowledgeChanges | None = None,
        neutralization: NeutralizationSession | None = None,
    ) -> None:
        self.service, self.used, self.changes = service, used, changes
        self.neutralization = neutralization
        self.vectors: PromptVectors = {}
        self._last: tuple[tuple[str, str, int | str], RunContext, str] | None = None
        self._costs: list[float] = []
        self._spec: tuple[RunContext, ModelSpec] | None = None

    def take_cost(self) -> float:
        """What the builds since the last call cost (the prompt's embedding), for the run
        to charge: its reported cost and budget then cover it, as its ledger rows do."""
        cost, self._costs = sum(self._costs), []
        return cost

    async def __call__(self, prompt: str, context: RunContext) -> str:
        if context.workflow_id or self.service.settings.cross_workflow_hints:
            return await self._build(prompt, context)
        # read before the build: a change committed while it reads is seen next round (the
        # generation read here while listening, as _stamp does, without its coroutine: every
        # round of a run asks)
        changes = self.changes
        stamp: int | str | None = changes.stamp() if changes is not None else None
        if stamp is None:
            stamp = await self._stamp()
        if stamp is None:
            return await self._build(prompt, context)
        held = self._spec
        if held is not None and held[0] is context:
            spec = held[1]
        else:
            try:
                spec = self._embedding_spec(context)
            except Exception:  # no embedding model: the build says so (and returns nothing)
                return await self._build(prompt, context)
        key = (prompt, spec.id, stamp)
        last = self._last
        if last is not None and last[0] == key and last[1] is context:
            return last[2]
        block = await self._build(prompt, context)
        self._last = (key, context, block) if block else None
        return block

    async def _stamp(self) -> int | str | None:
        """What tells a kept block from a stale one: the change generation while this
        process listens, else the WAL position (``None``: neither is known)."""
        changes = self.changes
        if changes is not None:
            stamp = changes.stamp()
            if stamp is None:
                stamp = await changes.start()
            if stamp is not None:
                return stamp
        return await wal_position(self.service.db)

    def _embedding_spec(self, context: RunContext) -> ModelSpec:
        """The embedding model of ``context``, chosen once per run (the run passes the same
        context every round; choosing it is a pass over the model registry)."""
        held = self._spec
        if held is not None and held[0] is context:
            return held[1]
        spec = self.service.embedding_spec(context)
        self._spec = (context, spec)
        return spec

    async def _build(self, prompt: str, context: RunContext) -> str:
        try:
            spec: ModelSpec | None = self._embedding_spec(context)
        except Exception:  # reported by build_agent_context, which chooses again
            spec = None
        return await build_agent_context(
            self.service,
            prompt,
            context,
            used=self.used,
            vectors=self.vectors,
            costs=self._costs,
            spec=spec,
            neutralization=self.neutralization,
        )


async def wal_position(db: Database) -> str | None:
    """The server's current WAL position (it moves with every write), ``None`` when there is
    none to read (a standby) or the database fails."""

    async def read(conn: Any) -> list[Any]:
        return list(await conn.rows("SELECT pg_current_wal_lsn()::text"))

    try:
        rows = await db.read_driver(read)
    except Exception as exc:
        log.debug("no WAL position: %s", exc)
        return None
    return str(rows[0][0])
