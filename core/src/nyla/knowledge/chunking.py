"""Token-aware chunking with overlap.

Text is split into units (a word, a number, a symbol) whose token costs add up to exactly what
:func:`nyla.ai.tokens.count_text_tokens` says of the whole text, so a chunk's token budget
holds for the same counter the AI service uses. A chunk ends at a sentence or paragraph
boundary when one lies in its last 40 %, otherwise at the budget; the next chunk starts
``overlap`` tokens before the end of the previous one. Chunks never cross content objects.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from nyla.ai.tokens import count_text_tokens_once, digit_tokens, word_tokens
from nyla.knowledge.language import detect_all
from nyla.models.knowledge import ContentObject

DEFAULT_CHUNK_TOKENS = 300
DEFAULT_OVERLAP_TOKENS = 40

#: a unit: a run of Latin letters (group 1), a run of digits (group 2), one CJK character or
#: one other character that is not a space; the counter's classes, so the units' costs add up
#: to :func:`~nyla.ai.tokens.count_text_tokens` of the whole text
_UNIT = re.compile(
    r"([A-Za-zÀ-ÖØ-öø-ÿ]+)|(\d+)|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|\S"
)
_SENTENCE_END = {".", "!", "?", ";", ":"}


@dataclass(frozen=True)
class Chunk:
    """A piece of a content object ready to embed."""

    seq: int
    text: str
    context_ref: str
    content_type: str
    token_count: int
    content_hash: str
    #: ``de``, ``en``, ``fr``, ``it`` or ``""`` (see :mod:`nyla.knowledge.language`)
    language: str = ""


def content_hash(text: str) -> str:
    """BLAKE2b-128 of the whitespace-normalized text, hex (what dedupe compares; stored as
    16 bytes, which keeps the chunk table's one btree narrow)."""
    return hashlib.blake2b(" ".join(text.split()).encode("utf-8"), digest_size=16).hexdigest()


def split_text(
    text: str,
    max_tokens: int = DEFAULT_CHUNK_TOKENS,
    overlap: int = DEFAULT_OVERLAP_TOKENS,
) -> list[str]:
    """``text`` cut into pieces of at most ``max_tokens`` tokens (a single unit larger than
    the budget stands alone), each starting ``overlap`` tokens before the previous ended."""
    return [text[s:e] for s, e in split_spans(text, max_tokens, overlap)]


def split_spans(
    text: str,
    max_tokens: int = DEFAULT_CHUNK_TOKENS,
    overlap: int = DEFAULT_OVERLAP_TOKENS,
) -> list[tuple[int, int]]:
    """The (start, end) character spans of :func:`split_text`'s pieces."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    if not 0 <= overlap < max_tokens:
        raise ValueError("overlap must be at least 0 and smaller than max_tokens")
    units: list[tuple[int, int]] = []
    # each unit's cost from its class, not by counting its text: the counter's memo would
    # fill with the words of a bulk load (and hold them) for no gain
    costs: list[int] = []
    for m in _UNIT.finditer(text):
        lo, hi = m.span()
        units.append((lo, hi))
        kind = m.lastindex
        costs.append(word_tokens(hi - lo) if kind == 1 else digit_tokens(hi - lo) if kind else 1)
    if not units:
        return []
    pieces: list[tuple[int, int]] = []
    start = prev_end = 0
    n = len(units)
    while start < n:
        end, used = start, 0
        while end < n and (used + costs[end] <= max_tokens or end == start):
            used += costs[end]
            end += 1
        if end < n:
            end = _snap(text, units, costs, start, end, max_tokens, prev_end)
        prev_end = end
        pieces.append((units[start][0], units[end - 1][1]))
        if end >= n:
            break
        # carry up to ``overlap`` tokens back, but leave room for the next new unit
        back, carried, room = end, 0, max_tokens - costs[end]
        while back > start + 1 and carried + costs[back - 1] <= min(overlap, room):
            back -= 1
            carried += costs[back]
        start = back if overlap else end
    return pieces


def _snap(
    text: str,
    units: list[tuple[int, int]],
    costs: list[int],
    start: int,
    end: int,
    max_tokens: int,
    prev_end: int,
) -> int:
    """Move ``end`` back to just after a sentence/paragraph end in the chunk's last 40 %,
    never to or before the previous chunk's end (every chunk must add new text)."""
    floor = 0.6 * max_tokens
    used = sum(costs[start:end])
    for j in range(end - 1, max(start, prev_end), -1):
        used -= costs[j]
        if used + costs[j] < floor:
            break
        s, e = units[j]
        paragraph = j + 1 < len(units) and "\n\n" in text[e : units[j + 1][0]]
        if text[s:e] in _SENTENCE_END or paragraph:
            return j + 1
    return end


def title_text(name: str, structure: dict[str, object]) -> str:
    """What a document says about itself besides its body: its file name (separators as
    spaces) and its section headings."""
    words = name.replace("_", " ").replace("-", " ").replace(".", " ")
    sections = structure.get("sections")
    headings = (
        [str(s.get("title", "")) for s in sections if isinstance(s, dict)]
        if isinstance(sections, list)
        else []
    )
    return "\n".join([words, *headings])


def chunk_objects(
    objects: list[ContentObject],
    max_tokens: int = DEFAULT_CHUNK_TOKENS,
    overlap: int = DEFAULT_OVERLAP_TOKENS,
    title: str = "",
) -> list[Chunk]:
    """Chunks of every content object, numbered in document order, each with its language.
    A document with no text of its own (a Markdown file that is one heading, an empty file)
    becomes one chunk of ``title`` (its name and headings): every indexed file can be
    found."""
    pieces = [
        (piece, obj) for obj in objects for piece in split_text(obj.text, max_tokens, overlap)
    ]
    if not pieces and title.strip():
        title_object = ContentObject(text=title.strip(), context_ref="title")
        pieces = [(piece, title_object) for piece in split_text(title, max_tokens, overlap)]
    languages = detect_all([piece for piece, _ in pieces])
    return [
        Chunk(
            seq=seq,
            text=piece,
            context_ref=obj.context_ref,
            content_type=obj.content_type,
            token_count=count_text_tokens_once(piece),
            content_hash=content_hash(piece),
            language=language,
        )
        for seq, ((piece, obj), language) in enumerate(zip(pieces, languages, strict=True))
    ]
