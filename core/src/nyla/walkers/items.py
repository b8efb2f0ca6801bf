"""One page of a sync, item by item: limits, unchanged detection, download, preparation.

Everything slow or fallible (download, extraction, embedding) happens here, before the page's
transaction; :mod:`nyla.walkers.commit` then writes the page at once.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from nyla.connections.errors import ConnectorError, ItemTooLargeError
from nyla.jobs.runtime import item_timeout
from nyla.knowledge.policy import effective_policy, normalize_path
from nyla.knowledge.writing import PreparedFile
from nyla.models.agent import RunContext
from nyla.models.datasource import Item, ItemFailure, WalkResult
from nyla.models.files import FileItem, Scope
from nyla.models.knowledge import IndexResult, IndexStatus
from nyla.text import clean_text, has_unstorable_chars

if TYPE_CHECKING:
    from nyla.walkers.ports import FilePreparer

log = logging.getLogger(__name__)


def item_hash(item: Item) -> str:
    """Hash of an item's metadata block (its version, size, time, names): equal hashes mean
    an unchanged item that is neither downloaded nor embedded again."""
    data = item.model_dump(mode="json", exclude={"content", "depth"})
    if item.content is not None:
        data["content"] = hashlib.sha256(item.content.encode()).hexdigest()
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def storable_items(items: list[Item]) -> tuple[list[Item], list[str]]:
    """A page's items as they can be stored: a title or path with a NUL byte or undecodable
    bytes (surrogate escapes) cleaned to U+FFFD, and an item whose id has one left out, as
    it could not be tracked or fetched again; their ids (cleaned) come second."""
    kept: list[Item] = []
    refused: list[str] = []
    for item in items:
        if has_unstorable_chars(item.id):
            refused.append(clean_text(item.id))
            continue
        dirty = {
            name: clean_text(value)
            for name in ("title", "path")
            if isinstance(value := getattr(item, name), str) and has_unstorable_chars(value)
        }
        kept.append(item.model_copy(update=dirty) if dirty else item)
    return kept, refused


def item_depth(item: Item, root: str) -> int:
    """How deep below the data source's path an item sits (1 = directly in it)."""
    rel = normalize_path(item.path or item.title)[len(normalize_path(root).rstrip("/")) :]
    return max(item.depth, len([p for p in rel.split("/") if p]))


@dataclass
class Known:
    """What the last sync stored about an item (``indexed``: its file is in the index)."""

    item_hash: str
    content_hash: str | None
    indexed: bool


class Seen(NamedTuple):
    """What a page records about an item it saw (an empty ``item_hash``: fetch it again)."""

    item_hash: str
    content_hash: str | None
    file_id: str | None
    path: str | None


@dataclass
class PagePlan:
    """The outcome of preparing one page: rows to write and items seen."""

    prepared: list[PreparedFile] = field(default_factory=list)
    seen: dict[str, Seen] = field(default_factory=dict)
    limit: str | None = None
    #: file id -> (name, path) of items whose content is unchanged but whose metadata changed
    #: (a rename, a move): the index row is renamed, nothing is extracted or embedded again
    renamed: dict[str, tuple[str, str, str | None]] = field(default_factory=dict)

    def mark(self, item: Item, digest: str, content_hash: str | None, file_id: str | None) -> None:
        """Record ``item`` as seen by this page."""
        self.seen[item.id] = Seen(digest, content_hash, file_id, item.path or None)


class PageWorker:
    """Prepares the items of pages for one data source within its limits."""

    def __init__(
        self, indexer: FilePreparer, source: Any, session: Any, handle: Any,
        limits: dict[str, int], walker: Any,
    ) -> None:  # fmt: skip
        self.indexer = indexer
        self.walker = walker
        self.source = source
        self.session = session
        self.handle = handle
        self.limits = limits
        self.counted = 0
        self.bytes = 0
        self.memo: dict[Any, Any] = {}
        self.dims: dict[str, int] = {}

    async def prepare_page(
        self, items: list[Item], known: dict[str, Known], result: WalkResult
    ) -> PagePlan:
        """Walk a page's items (duplicates by id: the last one counts)."""
        plan = PagePlan()
        for item in {i.id: i for i in items}.values():
            if plan.limit is not None:
                break
            if self.handle is not None and await self.handle.is_cancelled():
                result.cancelled = True
                break
            await self._one(item, known.get(item.id), plan, result)
        return plan

    def note_failures(
        self, failures: list[ItemFailure], known: dict[str, Known], plan: PagePlan,
        result: WalkResult,
    ) -> None:  # fmt: skip
        """Items the connector could not read while listing: reported, and kept as seen (a
        sweep keeps their earlier index; the empty hash fetches them again next time)."""
        for failure in failures:
            result.items_failed += 1
            result.errors.append(f"{clean_text(failure.item_id)}: {failure.reason}")
            if has_unstorable_chars(failure.item_id) or failure.item_id in plan.seen:
                continue
            earlier = known.get(failure.item_id)
            file_id = f"{self.source.ds.connection_id}:{failure.item_id}"
            plan.seen[failure.item_id] = Seen(
                "", earlier.content_hash if earlier else None, file_id, None
            )

    def _skip(self, item: Item, reason: str, plan: PagePlan, result: WalkResult) -> None:
        result.items_skipped += 1
        result.skipped[item.id] = reason
        plan.mark(item, item_hash(item), None, None)

    async def _one(
        self, item: Item, known: Known | None, plan: PagePlan, result: WalkResult
    ) -> None:
        result.items_seen += 1
        digest = item_hash(item)
        limits = self.limits
        if item.is_folder or not self.walker.accepts(item):
            reason = "a folder" if item.is_folder else "not taken by the walker"
            return self._skip(item, reason, plan, result)
        if "max_depth" in limits and item_depth(item, self.source.ds.path) > limits["max_depth"]:
            return self._skip(item, f"deeper than max_depth {limits['max_depth']}", plan, result)
        if self.counted >= limits.get("max_items", limits.get("max_tasks", 1 << 62)):
            plan.limit = "max_items" if "max_items" in limits else "max_tasks"
            return None
        self.counted += 1
        room = limits.get("max_bytes", 1 << 62) - self.bytes
        if known is not None and known.indexed and known.item_hash == digest:
            # what stays indexed counts against max_bytes as against max_items: the limits
            # cap what a source holds in the index, so syncs on a schedule never creep past
            if item.size is not None and item.size > room:
                plan.limit = "max_bytes"
                return None
            self.bytes += item.size or 0
            result.items_unchanged += 1
            plan.mark(item, digest, known.content_hash, self.file_id(item))
            return None
        max_file = limits.get("max_file_size")
        if max_file is not None and item.size is not None and item.size > max_file:
            return self._skip(item, f"larger than max_file_size ({item.size} bytes)", plan, result)
        if item.size is not None and item.size > room:
            plan.limit = "max_bytes"
            return None
        await self._fetch_and_prepare(
            item, digest, known, plan, result, min(max_file or room, room)
        )
        return None

    async def _fetch_and_prepare(
        self, item: Item, digest: str, known: Known | None, plan: PagePlan, result: WalkResult,
        cap: int,
    ) -> None:  # fmt: skip
        try:
            content, mime = await self._content(item, cap)
        except ItemTooLargeError as exc:
            return self._skip(item, f"too large: {exc}", plan, result)
        except (ConnectorError, TimeoutError, OSError) as exc:
            return self._failed(item, str(exc), known, plan, result)
        except Exception as exc:  # a connector's bug on one item must not end the sync
            log.exception("downloading %s failed", item.id)
            return self._failed(item, f"{type(exc).__name__}: {exc}", known, plan, result)
        self.bytes += len(content)
        content_hash = hashlib.sha256(content).hexdigest()
        if known is not None and known.indexed and known.content_hash == content_hash:
            result.items_unchanged += 1
            plan.mark(item, digest, content_hash, self.file_id(item))
            plan.renamed[self.file_id(item)] = (*self.name_and_path(item), item.url)
            return None
        try:
            prepared = await self._prepare(item, content, mime, content_hash)
        except TimeoutError as exc:  # extracting or embedding this one item took too long
            return self._failed(item, str(exc), known, plan, result)
        if isinstance(prepared, IndexResult):
            result.items_failed += 1
            result.errors.append(f"{item.id}: {prepared.error}")
            plan.mark(item, digest, None, None)
            return None
        if prepared.dims and prepared.result.embedding_model:
            self.dims[prepared.result.embedding_model] = prepared.dims
        plan.prepared.append(prepared)
        plan.mark(item, digest, content_hash, self.file_id(item))
        result.items_indexed += 1
        result.bytes_indexed += len(content)
        return None

    def _failed(
        self, item: Item, reason: str, known: Known | None, plan: PagePlan, result: WalkResult
    ) -> None:
        """An item that could not be fetched (gone since the listing, unreadable): it fails
        alone, seen (so a sweep keeps its earlier index) with an empty hash (fetched again
        the next time)."""
        result.items_failed += 1
        result.errors.append(f"{item.id}: {reason}")
        plan.mark(item, "", known.content_hash if known else None, self.file_id(item))

    async def _content(self, item: Item, cap: int) -> tuple[bytes, str]:
        if item.content is not None:
            data = item.content.encode("utf-8")
            if len(data) > cap:
                raise ItemTooLargeError(f"{len(data)} bytes", size=len(data), limit=cap)
            return data, item.mime or "text/plain"
        async with self._phase(item, "download"):
            got = await self.session.adapter.download(self.session, item.id, max_bytes=cap)
        return got.content, got.mime or item.mime or "application/octet-stream"

    def _phase(self, item: Item, phase: str) -> Any:
        """One phase of one item under its timeout, in a job (which shows it) or not."""
        if self.handle is not None:
            return self.handle.item(item.path or item.title, phase)
        return item_timeout(item.path or item.title, phase)

    def name_and_path(self, item: Item) -> tuple[str, str]:
        """The file name and source path an item is indexed under."""
        path = normalize_path(item.path or f"{self.source.ds.path}/{item.title}")
        name = item.title if "." in item.title or item.kind == "file" else f"{item.title}.txt"
        return name, path

    def file_id(self, item: Item) -> str:
        """The knowledge file id of a synced item."""
        return f"{self.source.ds.connection_id}:{item.id}"

    async def _prepare(
        self, item: Item, content: bytes, mime: str, content_hash: str
    ) -> PreparedFile | IndexResult:
        ds, siblings = self.source.ds, self.source.siblings
        name, path = self.name_and_path(item)
        if not effective_policy(siblings, path, "rag_index_enabled").value:
            return IndexResult(
                file_id=self.file_id(item),
                name=name,
                bytes=len(content),
                status=IndexStatus.FAILED,
                error=f"RAG indexing is switched off for {path}",
            )
        file = FileItem(
            id=self.file_id(item),
            name=name,
            mime_type=mime,
            size=len(content),
            content_hash=content_hash,
            scope=Scope(effective_policy(siblings, path, "scope").value),
            user_id=ds.user_id,
            mandate_id=ds.mandate_id,
            feature_instance_id=ds.feature_instance_id,
            neutralize=bool(effective_policy(siblings, path, "neutralize").value),
            data_source_id=ds.id,
        )
        context = RunContext(user_id=ds.user_id, mandate_id=ds.mandate_id)
        prepared = await self.indexer.prepare(
            file,
            content,
            context=context,
            source_path=path,
            connection_id=ds.connection_id,
            memo=self.memo,
            phase=lambda name: self._phase(item, name),
            consent_checked=True,  # the connection's at the start and at each page's commit
        )
        if not isinstance(prepared, IndexResult):
            prepared.row["web_url"] = item.url  # what a citation of it opens
        return prepared
