"""Reading a UDM: its structure, its blocks by reference, blocks as Markdown.

A reference names what ``browseContainer`` lists: a part (``page 2``, ``slide 3``,
``sheet Sales``, ``message body``), a section path (``section Intro > Scope``), a block of a
kind by number (``table 2``, ``image 1``, ``attachment 3``, ``heading 4``) or blocks by
number (``block 7``, ``blocks 3-9``).
"""

from __future__ import annotations

from typing import Any

from nyla.sdk.documents import Part, UdmDocument, WalkedBlock
from nyla_toolbox_documents.extract import DocumentError

#: blocks one reference may return at most
MAX_BLOCKS = 400
#: entries of each list (parts, sections, tables, embedded items) a structure shows at most
MAX_LISTED = 200
BLOCK_TYPES = ("text", "heading", "list", "code", "table", "image", "attachment")


def structure(udm: UdmDocument) -> dict[str, Any]:
    """Parts, sections, tables, images, attachments and counts (no block text)."""
    walked = list(udm.walk())
    counts = {t: sum(1 for w in walked if w.block.type == t) for t in BLOCK_TYPES}
    parts = [
        {"ref": f"{n.kind} {n.label}".strip(), "kind": n.kind, "blocks": len(n.children)}
        for n in udm.children
        if isinstance(n, Part)
    ]
    sections = [
        {"ref": "section " + " > ".join(w.section), "level": w.block.level, "part": w.part}
        for w in walked
        if w.block.type == "heading"
    ]
    tables = [
        {
            "ref": w.ref,
            "caption": w.block.caption,
            "columns": len(w.block.header),
            "rows": len(w.block.rows),
            "section": " > ".join(w.section),
            "part": w.part,
        }
        for w in walked
        if w.block.type == "table"
    ]
    embedded = [
        {
            "ref": w.ref,
            "name": getattr(w.block, "name", "") or getattr(w.block, "alt", ""),
            "mimeType": w.block.mime_type,
            "extractable": w.block.src.startswith("item:"),
            **({"size": w.block.size} if w.block.type == "attachment" else {}),
        }
        for w in walked
        if w.block.type in ("image", "attachment")
    ]
    listed = {"parts": parts, "sections": sections, "tables": tables, "embedded": embedded}
    more = {k: len(v) - MAX_LISTED for k, v in listed.items() if len(v) > MAX_LISTED}
    return {
        "kind": udm.kind,
        "title": udm.title,
        "meta": udm.meta,
        "counts": {k: v for k, v in counts.items() if v},
        **{k: v[:MAX_LISTED] for k, v in listed.items()},
        **({"notListed": more} if more else {}),
    }


def select(udm: UdmDocument, refs: list[str]) -> list[WalkedBlock]:
    """The blocks ``refs`` name, in document order, each once; an unknown reference raises
    :class:`DocumentError` naming it."""
    walked = list(udm.walk())
    chosen: dict[int, WalkedBlock] = {}
    for ref in refs:
        hits = _matching(walked, " ".join(ref.split()))
        if not hits:
            raise DocumentError(f"no {ref!r} in this document; browseContainer lists its refs")
        chosen.update((w.index, w) for w in hits)
    ordered = [chosen[i] for i in sorted(chosen)]
    if len(ordered) > MAX_BLOCKS:
        raise DocumentError(f"{len(ordered)} blocks asked for; at most {MAX_BLOCKS} per call")
    return ordered


def _matching(walked: list[WalkedBlock], ref: str) -> list[WalkedBlock]:
    head, _, rest = ref.partition(" ")
    head = head.lower()
    if head == "section":
        path = [p.strip().lower() for p in rest.split(">")]
        return [w for w in walked if [s.lower() for s in w.section[: len(path)]] == path]
    if head in ("block", "blocks"):
        first, _, last = rest.partition("-")
        try:
            low, high = int(first), int(last or first)
        except ValueError:
            raise DocumentError(f"{ref!r}: write 'block 7' or 'blocks 3-9'") from None
        return [w for w in walked if low <= w.index <= high]
    part = [w for w in walked if w.part.lower() == ref.lower()]
    return part or [w for w in walked if w.ref.lower() == ref.lower()]


def filter_blocks(udm: UdmDocument, types: list[str]) -> list[WalkedBlock]:
    """The blocks of the given types, in document order."""
    unknown = sorted(set(types) - set(BLOCK_TYPES))
    if unknown:
        raise DocumentError(f"unknown block types {unknown}; known: {', '.join(BLOCK_TYPES)}")
    return [w for w in udm.walk() if w.block.type in types]


def walked_wire(w: WalkedBlock) -> dict[str, Any]:
    """A walked block as the model sees it."""
    return {
        "index": w.index,
        "ref": w.ref,
        "part": w.part,
        "section": " > ".join(w.section),
        "block": w.block.model_dump(by_alias=True, exclude_defaults=False),
    }


def to_markdown(blocks: list[Any]) -> str:
    """Blocks as Markdown (tables as pipe tables, embedded items as their reference)."""
    return "\n\n".join(filter(None, (_block_markdown(b) for b in blocks)))


def _block_markdown(block: Any) -> str:
    if block.type == "heading":
        return "#" * block.level + " " + block.text
    if block.type == "text":
        return str(block.text)
    if block.type == "list":
        marks = [f"{i}." if block.ordered else "-" for i in range(1, len(block.items) + 1)]
        return "\n".join(f"{m} {item}" for m, item in zip(marks, block.items, strict=True))
    if block.type == "code":
        return f"```{block.language}\n{block.text}\n```"
    if block.type == "table":
        width = max([len(block.header), *(len(r) for r in block.rows)], default=0)
        header = (block.header + [""] * width)[:width]
        lines = [_row(header), _row(["---"] * width)]
        lines += [_row((r + [""] * width)[:width]) for r in block.rows]
        return "\n".join(lines)
    if block.type == "image":
        return f"![{block.alt}]({block.src})"
    return f"[attachment: {block.name} ({block.mime_type}, {block.size} bytes)]"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
