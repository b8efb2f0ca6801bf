"""Contracts of the knowledge store: content objects, index results, search hits, policies,
RAG limits, cost estimates and the inventory (seeds: ``datamodelKnowledge``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import ConfigDict, Field

from nyla.models.agent import RunContext
from nyla.models.base import WireModel
from nyla.models.files import Scope
from nyla.models.slotted import SlottedWire


class IndexStatus(StrEnum):
    """State of a file in the knowledge store."""

    PENDING = "pending"
    INDEXED = "indexed"
    FAILED = "failed"


class ContentObject(WireModel):
    """One piece of extracted content (no model call): a section, a page, a table.

    ``context_ref`` says where it sits in the file (``page 3``, ``section Intro > Setup``,
    ``table 1 rows 1-40``); ``content_type`` is ``text`` or ``table``.
    """

    text: str
    context_ref: str = ""
    content_type: Literal["text", "table"] = "text"


class ExtractedDocument(WireModel):
    """What extraction produced: content objects, the structure index that
    ``browseContainer``-style tools read (pages, sections, headings, tables) and a summary."""

    kind: str
    objects: list[ContentObject] = Field(default_factory=list)
    structure: dict[str, Any] = Field(default_factory=dict)
    summary: str = ""


class SectionText(WireModel):
    """One section of an indexed file as the store holds it (neutralized when the file is):
    ``section`` is its ref in the structure index (``section Setup > Install``), ``text`` its
    body with its subsections and tables, in document order."""

    file_id: str
    section: str
    title: str
    level: int
    text: str


class UnknownSectionError(ValueError):
    """A section the file's structure index does not name; ``available`` lists (some of)
    the refs it does name."""

    def __init__(self, message: str, available: Sequence[str]) -> None:
        super().__init__(message)
        self.available = list(available)


class IndexResult(WireModel):
    """Outcome of indexing one file."""

    file_id: str
    name: str
    status: IndexStatus
    error: str | None = None
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    tokens: int = 0
    bytes: int = 0
    embedding_model: str | None = None
    cost_chf: float = 0.0
    is_neutralized: bool = False


class SearchFilters(WireModel):
    """Optional narrowing of a search on typed chunk columns (never JSON keys)."""

    file_ids: list[str] | None = None
    data_source_ids: list[str] | None = None
    content_types: list[str] | None = None


@dataclass(slots=True, kw_only=True)
class SearchQuery:
    """One knowledge search: what to look for, for whom, how many hits and where.

    ``text`` is embedded with the store's embedding model unless ``vector`` is given (then
    ``model`` names the model that embedded it); ``scopes`` narrows what ``context`` may
    read; ``hybrid`` fuses full-text ranks with the vector ranks (``None``: the store's
    setting); ``rerank`` reorders the best hits with a reranking model through the AI
    service (``None``: the store's setting, off by default). A plain dataclass, not a
    pydantic model: it is built once per search and never crosses the wire. Not frozen:
    a frozen dataclass sets each field through ``object.__setattr__``, which made building
    it 4.5 µs instead of 1.7 (measured; a third of the instructions between a search's
    call and its statement); the search reads its fields once, at its start
    (``dataclasses.replace`` makes a changed copy)."""

    text: str
    context: RunContext
    k: int = 10
    scopes: Sequence[Scope | str] | None = None
    filters: SearchFilters | None = None
    hybrid: bool | None = None
    vector: Sequence[float] | None = None
    model: str | None = None
    rerank: bool | None = None

    def __post_init__(self) -> None:
        if self.vector is not None and not self.model:
            raise ValueError("a search query with a vector needs the model that embedded it")


class HitSource(WireModel):
    """One place a search hit's file was indexed from (its own file id and name, the path
    in its data source and the connection, when it came through one)."""

    file_id: str
    file_name: str
    source_path: str | None = None
    connection_id: str | None = None


class SearchHitFields(WireModel):
    """The fields of a :class:`SearchHit` as a pydantic model: what validates a hit made or
    read from outside the search, and what writes it out (``model_dump``, the wire)."""

    model_config = ConfigDict(title="SearchHit")

    chunk_id: int
    file_id: str
    file_name: str
    seq: int
    text: str
    context_ref: str = ""
    content_type: str = "text"
    scope: Scope
    distance: float | None = None
    score: float = 0.0
    embedding_model: str = ""
    file_hash: str = ""
    source_path: str | None = None
    connection_id: str | None = None
    web_url: str | None = None
    also_in: list[HitSource] = Field(default_factory=list)


#: a hit's fields, in :class:`SearchHitFields` order
HIT_FIELDS = tuple(SearchHitFields.model_fields)


class SearchHit(SlottedWire):
    """One chunk a search returned. ``distance`` is the cosine distance (``None`` for a
    keyword-only hit of a hybrid search); ``score`` is what the result is ordered by (the RRF
    score for hybrid, ``1 - distance`` otherwise). ``file_hash`` is the SHA-256 of the
    file's bytes; the same file indexed from several places (a folder indexed with ``nyla
    knowledge index`` and also connected) is one hit, the other places in ``also_in``.
    ``web_url`` is where the vendor shows a synced item (``None`` for anything else).

    Used like a pydantic model (a :class:`~nyla.models.slotted.SlottedWire` whose model is
    :class:`SearchHitFields`): attributes, ``SearchHit(**fields)`` and :meth:`model_validate`
    (validated, camelCase names too), :meth:`model_dump`, :meth:`to_wire`,
    :meth:`model_copy`, equality, and as a field of a pydantic model (:class:`SearchResult`:
    validated and written out the same way). It is a slotted class because a search builds
    ten or more from its own typed rows without validation (:mod:`nyla.knowledge.search_hits`):
    a pydantic object cost ~5 µs a hit there, a third of nyla's Python around a search's
    statement (issue 32)."""

    __slots__ = HIT_FIELDS
    _fields = SearchHitFields

    chunk_id: int
    file_id: str
    file_name: str
    seq: int
    text: str
    context_ref: str
    content_type: str
    scope: Scope
    distance: float | None
    score: float
    embedding_model: str
    file_hash: str
    source_path: str | None
    connection_id: str | None
    web_url: str | None
    also_in: list[HitSource]


class SearchResult(WireModel):
    """Hits plus how they were found (``exact`` or ``hnsw``, hybrid or not)."""

    hits: list[SearchHit] = Field(default_factory=list)
    path: Literal["exact", "hnsw", "none"] = "none"
    hybrid: bool = False
    candidates: int = 0
    embedding_model: str | None = None
    #: the reranking model that ordered the hits (``None``: not reranked)
    reranked_by: str | None = None


class ReindexResult(WireModel):
    """What ``nyla knowledge reindex`` moved to ``model``: embedded rows (chunks, round and
    workflow memory) and the files now wholly on it."""

    model: str
    dimensions: int = 0
    rows: int = 0
    files: int = 0
    seconds: float = 0.0


class PolicyValue(WireModel):
    """A resolved policy field and where it came from (``None`` source = the default)."""

    field: str
    value: Any
    source_id: str | None = None
    source_path: str | None = None


class PurgeResult(WireModel):
    """What a purge removed."""

    files: int = 0
    chunks: int = 0
    reason: str = ""


class CostBasis(WireModel):
    """How a cost estimate was computed."""

    kind: Literal["files", "clickup"]
    limits: dict[str, int]
    assumptions: dict[str, Any]
    notes: list[str] = Field(default_factory=list)


class CostEstimate(WireModel):
    """Indicative CHF estimate of a full sync of a data source with its current limits."""

    estimated_tokens: int
    estimated_chf: float
    basis: CostBasis
    source_id: str


class InventoryRow(WireModel):
    """One line of an inventory: a group (scope/owner) with its counts."""

    scope: str
    owner: str | None = None
    files: int = 0
    failed_files: int = 0
    chunks: int = 0
    bytes: int = 0
    last_indexed: datetime | None = None


class InventoryJob(WireModel):
    """A running indexing job shown in the inventory (``status`` ``stale``: its process
    stopped beating)."""

    id: str
    kind: str
    status: str
    progress: int = 0
    total: int | None = None
    message: str = ""
    started_at: datetime | None = None


class Inventory(WireModel):
    """RAG inventory for a user, a mandate or the platform."""

    level: Literal["user", "mandate", "platform"]
    subject: str | None = None
    rows: list[InventoryRow] = Field(default_factory=list)
    jobs: list[InventoryJob] = Field(default_factory=list)

    @property
    def totals(self) -> InventoryRow:
        """All rows added up."""
        last = [r.last_indexed for r in self.rows if r.last_indexed]
        return InventoryRow(
            scope="total",
            files=sum(r.files for r in self.rows),
            failed_files=sum(r.failed_files for r in self.rows),
            chunks=sum(r.chunks for r in self.rows),
            bytes=sum(r.bytes for r in self.rows),
            last_indexed=max(last) if last else None,
        )


class LimitRange(WireModel):
    """The range a RAG limit may be set to."""

    min: int
    max: int


class RagLimits(WireModel):
    """A data source's RAG limits: what a sync reads (``values``: the central defaults
    merged with the stored overrides, snake_case keys), the ``overrides`` it stores, and
    the range each may be set to (``ranges``, camelCase keys as on the wire)."""

    kind: Literal["files", "clickup"]
    values: dict[str, int]
    overrides: dict[str, int] = Field(default_factory=dict)
    ranges: dict[str, LimitRange] = Field(default_factory=dict)


class SettingsUpdate(WireModel):
    """A data source's settings after a partial update, with the limits they now give."""

    settings: dict[str, Any]
    limits: RagLimits


class WorkflowEntity(WireModel):
    """One value of a workflow's memory."""

    key: str
    kind: str
    value: Any
