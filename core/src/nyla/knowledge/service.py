"""The knowledge store service, ``kernel.knowledge``: a thin facade over its parts, each a
service of its own with the dependencies it uses passed in.

- ``indexing`` (:class:`~nyla.knowledge.ingest.Ingestion`) — a file, a batch, local paths, a
  walker's download; the work is done by ``indexer`` (:class:`~nyla.knowledge.indexing.Indexer`)
- ``retrieval`` (:class:`~nyla.knowledge.retrieval.Retrieval`) — scoped search, file index
  rows, the agent's RAG block
- ``memory`` (:class:`~nyla.knowledge.remembering.Memory`) — round and workflow memory
- ``governance`` (:class:`~nyla.knowledge.governance.Governance`) — connections, data
  sources, the policy resolver, consent, purge
- ``sources`` (:class:`~nyla.knowledge.source_settings.SourceSettings`) — RAG limits,
  settings and cost of a data source
- ``indexes`` (:class:`~nyla.knowledge.vector_index.VectorIndexes`) — the HNSW indexes and
  the planner statistics
- ``section_reader`` (:class:`~nyla.knowledge.section_reader.SectionReader`) — one section of
  an indexed file, scope-checked and cached by the file's version

The facade itself keeps what spans the parts (the embedding model choice, re-embedding, the
inventory) and the calls other services make of the store: search, the agent's context and
round memory, the policy a tool's download inherits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from nyla.knowledge.changes import knowledge_changes
from nyla.knowledge.governance import Governance
from nyla.knowledge.indexing import Indexer
from nyla.knowledge.ingest import (
    ANALYZE_AFTER_ROWS,
    Ingestion,
    ProgressFn,
    file_item_for_path,
)
from nyla.knowledge.inventory import inventory
from nyla.knowledge.local_paths import expand_paths
from nyla.knowledge.remembering import Memory, RoundBuffer
from nyla.knowledge.retrieval import Retrieval
from nyla.knowledge.section_reader import SectionReader
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.source_settings import SourceSettings
from nyla.knowledge.vector_index import VectorIndexes
from nyla.models.agent import RoundToolResult, RunContext
from nyla.models.ai import ModelSpec, OperationType
from nyla.models.knowledge import (
    Inventory,
    PolicyValue,
    ReindexResult,
    SearchHit,
    SearchQuery,
    SearchResult,
    SectionText,
)

if TYPE_CHECKING:
    from nyla.ai.neutralize import NeutralizationSession
    from nyla.ai.service import AiService
    from nyla.db import Database

__all__ = [
    "ANALYZE_AFTER_ROWS",
    "KnowledgeService",
    "ProgressFn",
    "expand_paths",
    "file_item_for_path",
]


class KnowledgeService:
    """Indexing, scoped semantic search, agent context, round/workflow memory, consent and
    purge, RAG limits and cost estimates, inventory — each in its part (see the module).
    Built with the database, the AI service (embeddings) and the kernel's settings (their
    ``knowledge`` section) or the knowledge settings themselves."""

    def __init__(
        self, db: Database, ai: AiService, settings: dict[str, Any] | KnowledgeSettings
    ) -> None:
        self.db = db
        self.ai = ai
        self.settings = (
            settings
            if isinstance(settings, KnowledgeSettings)
            else KnowledgeSettings.from_kernel_settings(settings)
        )
        self.indexes = VectorIndexes(db)
        self.indexer = Indexer(
            db=db,
            ai=ai,
            settings=self.settings,
            embedding_spec=self.embedding_spec,
            ensure_vector_index=self.indexes.ensure_vector_index,
        )
        self.indexing = Ingestion(db, self.settings, self.indexer, self.indexes)
        self.retrieval = Retrieval(db, ai, self.settings, self.embedding_spec, self.indexes)
        self.memory = Memory(db, ai, self.embedding_spec)
        self.governance = Governance(db)
        self.sources = SourceSettings(db, self.embedding_spec)
        self.section_reader = SectionReader(db)
        #: this process's news of changed knowledge (its own writes are counted from now)
        self.changes = knowledge_changes(db)

    def embedding_spec(self, context: RunContext | None = None) -> ModelSpec:
        """The embedding model in use: ``knowledge.embedding_model`` (or
        ``NYLA_EMBEDDING_MODEL``) when set, else the AI service's choice."""
        return self.ai.select_model(
            OperationType.EMBEDDING, context=context, model=self.settings.embedding_model
        )

    async def search(self, query: SearchQuery) -> SearchResult:
        """The chunks nearest to ``query`` that its context may read
        (:meth:`Retrieval.search <nyla.knowledge.retrieval.Retrieval.search>`)."""
        return await self.retrieval.search(query)

    async def read_section(self, file_id: str, section: str, context: RunContext) -> SectionText:
        """One section of an indexed file that ``context`` may read, by heading path or number
        (:meth:`SectionReader.read <nyla.knowledge.section_reader.SectionReader.read>`)."""
        return await self.section_reader.read(file_id, section, context)

    async def build_agent_context(
        self, prompt: str, context: RunContext, *, used: list[SearchHit] | None = None
    ) -> str:
        """The RAG block for an agent round (empty when embedding or the database fails);
        the hits it quotes are appended to ``used``."""
        return await self.retrieval.build_agent_context(prompt, context, used=used)

    def agent_context_builder(
        self, used: list[SearchHit], neutralization: NeutralizationSession | None = None
    ) -> Callable[[str, RunContext], Awaitable[str]]:
        """The context builder of one agent run (:class:`~nyla.knowledge.context.
        AgentContextBuilder`): :meth:`build_agent_context`, hits quoted going to ``used``,
        with the prompt embedded once (through the run's placeholder session
        ``neutralization`` when given) and, for a run whose block reads no memory, built
        again only when the knowledge changed (:mod:`nyla.knowledge.changes`)."""
        from nyla.knowledge.context import AgentContextBuilder

        changes = self.changes if self.settings.context_notify else None
        return AgentContextBuilder(self.retrieval, used, changes, neutralization)

    def round_recorder(self, context: RunContext) -> Callable[..., Awaitable[None]]:
        """The round recorder of one agent run: :meth:`record_round` when the run's context
        reads round memory while it goes on (a workflow, or cross-workflow hints), else a
        :class:`~nyla.knowledge.remembering.RoundBuffer` the caller flushes when the run
        ends."""
        if context.workflow_id or self.settings.cross_workflow_hints:
            return self.record_round
        return RoundBuffer(self.memory)

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
        """Write the memory of one agent round (:meth:`Memory.record_round
        <nyla.knowledge.remembering.Memory.record_round>`)."""
        await self.memory.record_round(
            run_id=run_id,
            round=round,
            context=context,
            file_refs=file_refs,
            tool_results=tool_results,
            decisions=decisions,
        )

    async def resolve_policy(self, connection_id: str, path: str, field: str) -> PolicyValue:
        """The effective ``rag_index_enabled`` / ``neutralize`` / ``scope`` at ``path`` (what
        a tool's download inherits; :meth:`Governance.resolve_policy
        <nyla.knowledge.governance.Governance.resolve_policy>`)."""
        return await self.governance.resolve_policy(connection_id, path, field)

    async def reindex(
        self, model: str | None = None, *, on_progress: Callable[[int, int], None] | None = None
    ) -> ReindexResult:
        """Embed everything stored under another model again with ``model`` (default: the
        model in use), build its vector index and refresh the planner statistics."""
        from nyla.knowledge.reindex import reindex

        target = model or self.embedding_spec().id
        result = await reindex(self.db, self.ai, target, on_progress=on_progress)
        if result.dimensions:
            await self.indexes.ensure_vector_index(target, result.dimensions)
        await self.indexes.analyze()
        return result

    async def inventory(self, level: str = "user", subject: str | None = None) -> Inventory:
        """Files, chunks, bytes, last indexed and running jobs for a user, a mandate or the
        platform."""
        async with self.db.session() as s:
            return await inventory(s, level, subject)
