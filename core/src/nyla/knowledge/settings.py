"""Settings of the knowledge store, read from ``kernel.settings['knowledge']`` (and
``NYLA_EMBEDDING_MODEL`` for the embedding model)."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, Field

from nyla.knowledge.chunking import DEFAULT_CHUNK_TOKENS, DEFAULT_OVERLAP_TOKENS


class ContextBudgets(BaseModel):
    """Token budget of each layer of :meth:`KnowledgeService.build_agent_context`."""

    known_files: int = 200
    semantic: int = 1500
    round_memory: int = 600
    workflow_entities: int = 400
    mandate_shared: int = 600
    cross_workflow: int = 300


class KnowledgeSettings(BaseModel):
    """Tunables of indexing and search.

    A search ranks its readable, filtered chunks (counted from the file index) exactly
    while that costs less than an iterative scan of the HNSW index at the ``ef_search`` it
    would need (``search.prefer_exact``, a cost model measured on the server;
    ``exact_cost_factor`` scales the HNSW side: 4 as measured, 0 never exact where an index
    exists); ``exact_threshold`` ranks exactly whatever the model says while the exact cost
    is at most that (0: the cost model alone decides).
    """

    embedding_model: str | None = None
    chunk_tokens: int = Field(default=DEFAULT_CHUNK_TOKENS, ge=16)
    overlap_tokens: int = Field(default=DEFAULT_OVERLAP_TOKENS, ge=0)
    embed_batch: int = Field(default=64, ge=1)
    write_batch_rows: int = Field(default=5000, ge=1)
    exact_threshold: int = Field(default=0, ge=0)
    exact_cost_factor: float = Field(default=4.0, ge=0)
    ef_search: int = Field(default=100, ge=10)
    #: grow ef_search with the table and the filter (``search.effective_ef_search``)
    adaptive_ef_search: bool = True
    max_scan_tuples: int = Field(default=20_000, ge=1000)
    #: keep the hits' file details in the process between searches, kept fresh by
    #: LISTEN/NOTIFY (``knowledge.file_rows``); off where notifications do not reach the
    #: connection (a transaction-pooling proxy such as PgBouncer in transaction mode)
    file_rows_cache: bool = True
    hybrid: bool = True
    hybrid_candidates: int = Field(default=40, ge=1)
    rrf_k: int = 60
    #: full-text ranking: ``bm25`` or the earlier ``ts_rank`` (see ``search_text``)
    text_rank: Literal["bm25", "ts_rank"] = "bm25"
    #: weight of the vector ranking in the fusion when the query's language is not one
    #: the embedding model was trained on (``ModelCapabilities.languages``), or cannot be
    #: told; 1 otherwise
    foreign_vector_weight: float = Field(default=0.05, ge=0.0, le=1.0)
    #: reorder the best hits with a reranking model through the AI service (off: it costs
    #: a model call per search); ``rerank_model``: which one (default: the AI service's
    #: choice for operation ``rerank``); ``rerank_candidates``: how many hits it reads
    rerank: bool = False
    rerank_model: str | None = None
    rerank_candidates: int = Field(default=20, ge=1, le=200)
    context_k: int = 8
    #: keep a run's context block until the knowledge changes, heard through LISTEN/NOTIFY
    #: (``knowledge.changes``); off where notifications do not reach the connection
    #: (PgBouncer in transaction mode): the WAL position is then read every round
    context_notify: bool = True
    cross_workflow_hints: bool = False
    budgets: ContextBudgets = Field(default_factory=ContextBudgets)

    @classmethod
    def from_kernel_settings(cls, settings: dict[str, Any]) -> KnowledgeSettings:
        """Settings from ``kernel.settings['knowledge']`` plus the environment (and, for
        reranking, the config file: ``NYLA_KNOWLEDGE_RERANK``, ``NYLA_RERANK_MODEL``)."""
        from nyla.config import config_value

        values = dict(settings.get("knowledge") or {})
        if not values.get("embedding_model") and os.environ.get("NYLA_EMBEDDING_MODEL"):
            values["embedding_model"] = os.environ["NYLA_EMBEDDING_MODEL"]
        rerank = config_value("NYLA_KNOWLEDGE_RERANK")
        if "rerank" not in values and rerank is not None:
            values["rerank"] = rerank.strip().lower() not in ("0", "false", "no", "off")
        if not values.get("rerank_model") and config_value("NYLA_RERANK_MODEL"):
            values["rerank_model"] = config_value("NYLA_RERANK_MODEL")
        return cls.model_validate(values)
