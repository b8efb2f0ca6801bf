"""One section of an indexed file, read back from the store (``readSection``).

A section is named as the file's structure index names it: its heading path (``Guide >
Setup > Install``, with or without the ``section`` prefix), the end of one path only (``Setup >
Install``, ``Install``), or its 1-based position in the section list. Its text is the file's chunks in that section
and its subsections (tables included), joined again where chunking made them overlap.

Every read checks the caller's scope against the file's owner key first (one narrow
primary-key row, which also carries the file's version). The section list and the section
texts are cached, least recently used first out, keyed by the file id *and* its content hash
and indexing time: a re-indexed file has a new key, so no stale text is served, and a cache
hit costs that one row read only.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select

from nyla.errors import FileAccessError
from nyla.knowledge.vectors import chunk_id_range, readable_keys
from nyla.models.knowledge import IndexStatus, SectionText, UnknownSectionError
from nyla.tables.knowledge import ContentChunk, FileContentIndex

if TYPE_CHECKING:
    from nyla.db import Database
    from nyla.models.agent import RunContext

#: cached entries (section lists and section texts together)
CACHE_SIZE = 256
#: characters of section text the cache holds at most (about 8 MB of str)
CACHE_BUDGET_CHARS = 2_000_000
#: a section text longer than this is read each time instead of held in memory
CACHE_MAX_CHARS = 200_000
#: section refs an unknown-section error lists at most
LISTED_SECTIONS = 30
#: an overlap between two chunks shorter than this is taken for chance, not chunking
_MIN_OVERLAP = 16

_Version = tuple[str, str, str]


class SectionReader:
    """Reads sections of indexed files for a caller's scope, with a bounded LRU cache."""

    def __init__(
        self, db: Database, size: int = CACHE_SIZE, budget_chars: int = CACHE_BUDGET_CHARS
    ) -> None:
        self.db = db
        self.size = size
        self.budget_chars = budget_chars
        self._cache: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._chars = 0

    async def read(self, file_id: str, section: str, context: RunContext) -> SectionText:
        """The text of ``section`` of ``file_id``. Raises :class:`FileAccessError` when the
        file is not indexed or not in the caller's scope (the same answer for both), and
        :class:`UnknownSectionError` when the structure index does not name ``section``."""
        row = await self._version(file_id, context)
        version: _Version = (file_id, row.content_hash, str(row.indexed_at))
        sections = self._get((*version, None))
        if sections is None:
            sections = await self._sections(file_id)
            self._put((*version, None), sections)
        chosen = _choose(sections, section)
        ref = str(chosen["ref"])
        text = self._get((*version, ref))
        if text is None:
            text = await self._text(row.file_no, ref)
            if len(text) <= min(CACHE_MAX_CHARS, self.budget_chars):
                self._put((*version, ref), text)
        return SectionText(
            file_id=file_id,
            section=ref,
            title=str(chosen.get("title", "")),
            level=int(chosen.get("level", 0)),
            text=text,
        )

    async def _version(self, file_id: str, context: RunContext) -> Any:
        query = select(
            FileContentIndex.owner_key,
            FileContentIndex.content_hash,
            FileContentIndex.indexed_at,
            FileContentIndex.file_no,
            FileContentIndex.status,
        ).where(FileContentIndex.file_id == file_id)
        async with self.db.session() as s:
            row = (await s.execute(query)).first()
        if (
            row is None
            or row.owner_key not in readable_keys(context)
            or row.status != IndexStatus.INDEXED.value
        ):
            raise FileAccessError(f"file {file_id!r} is not in your knowledge store")
        return row

    async def _sections(self, file_id: str) -> list[dict[str, Any]]:
        query = select(FileContentIndex.structure).where(FileContentIndex.file_id == file_id)
        async with self.db.session() as s:
            structure = (await s.execute(query)).scalar() or {}
        listed = structure.get("sections") if isinstance(structure, dict) else None
        return [s for s in listed or [] if isinstance(s, dict) and s.get("ref")]

    async def _text(self, file_no: int, ref: str) -> str:
        low, high = chunk_id_range(file_no)
        query = (
            select(ContentChunk.context_ref, ContentChunk.data)
            .where(ContentChunk.id >= low, ContentChunk.id < high)
            .where(
                or_(
                    ContentChunk.context_ref == ref,
                    func.starts_with(ContentChunk.context_ref, ref + " > "),
                    func.starts_with(ContentChunk.context_ref, ref + " / "),
                )
            )
            .order_by(ContentChunk.id)
        )
        async with self.db.session() as s:
            rows = (await s.execute(query)).all()
        return join_chunks([(r.context_ref, r.data) for r in rows])

    def _get(self, key: tuple[Any, ...]) -> Any:
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
        return found

    def _put(self, key: tuple[Any, ...], value: Any) -> None:
        self._cache[key] = value
        self._chars += _chars(value)
        while len(self._cache) > self.size or self._chars > self.budget_chars:
            self._chars -= _chars(self._cache.popitem(last=False)[1])


def _chars(value: Any) -> int:
    return len(value) if isinstance(value, str) else 0


def _choose(sections: list[dict[str, Any]], wanted: str) -> dict[str, Any]:
    name = " ".join(wanted.split())
    if name.isdigit() and 1 <= int(name) <= len(sections):
        return sections[int(name) - 1]
    ref = name if name.startswith("section ") else f"section {name}"
    by_ref = [s for s in sections if _norm(str(s["ref"])) == _norm(ref)]
    tail = " > " + _norm(name.removeprefix("section "))
    by_tail = [s for s in sections if _norm(str(s["ref"])).endswith(tail)]
    for found in (by_ref, by_tail):
        if len(found) == 1:
            return found[0]
    refs = [str(s["ref"]).removeprefix("section ") for s in sections]
    if not refs:
        raise UnknownSectionError("this file has no sections (no headings were found)", [])
    shown = refs[:LISTED_SECTIONS]
    more = f" and {len(refs) - len(shown)} more" if len(refs) > len(shown) else ""
    why = "names several sections" if by_tail else "is not a section of this file"
    raise UnknownSectionError(
        f"{wanted!r} {why}; sections (a path or a number 1-{len(refs)}): "
        + "; ".join(shown)
        + more,
        shown,
    )


def _norm(text: str) -> str:
    return " > ".join(part.strip().casefold() for part in text.split(">"))


def join_chunks(chunks: list[tuple[str, str]]) -> str:
    """The chunks' texts in order as one text: a chunk that begins with the end of the one
    before it in the same object (chunking's overlap) continues it, anything else starts a
    new paragraph."""
    out: list[str] = []
    prev_ref = None
    for ref, text in chunks:
        if out and ref == prev_ref:
            k = _overlap(out[-1], text)
            if k:
                out[-1] += text[k:]
                continue
        out.append(text)
        prev_ref = ref
    return "\n\n".join(out)


def _overlap(before: str, after: str) -> int:
    for k in range(min(len(before), len(after)), _MIN_OVERLAP - 1, -1):
        if before.endswith(after[:k]):
            return k
    return 0
