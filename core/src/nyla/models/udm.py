"""The Unified Document Model (UDM): one typed node tree for every document kind.

Extractors produce it (a PDF's pages, a workbook's sheets, a deck's slides, a mail's
attachments and a ZIP's entries are :class:`Part` nodes) and the renderer accepts it. The
leaves are content blocks: ``text``, ``heading``, ``list``, ``code``, ``table``, ``image``
and ``attachment``. Sections are not nodes: a block's section is the trail of headings before
it (``section A > B``), so a document read from a flat format and one built by hand agree.
Binary content (an image, an attachment) is never inside the tree: a block names it by
``ref`` and the extractor keeps the bytes beside the tree.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "AttachmentBlock",
    "Block",
    "CodeBlock",
    "HeadingBlock",
    "ImageBlock",
    "ListBlock",
    "Node",
    "Part",
    "TableBlock",
    "TextBlock",
    "UdmDocument",
    "WalkedBlock",
]


class _Node(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True
    )


class TextBlock(_Node):
    """A paragraph of text."""

    type: Literal["text"] = "text"
    text: str


class HeadingBlock(_Node):
    """A heading; it opens a section that runs to the next heading of its level or above."""

    type: Literal["heading"] = "heading"
    level: int = Field(default=1, ge=1, le=6)
    text: str


class ListBlock(_Node):
    """A bulleted or numbered list of one-line items."""

    type: Literal["list"] = "list"
    ordered: bool = False
    items: list[str] = Field(default_factory=list)


class CodeBlock(_Node):
    """Preformatted text, kept verbatim."""

    type: Literal["code"] = "code"
    language: str = ""
    text: str


class TableBlock(_Node):
    """A table: a header row and data rows of text cells (``style`` names a table style of
    the renderer's ``style.tables``)."""

    type: Literal["table"] = "table"
    caption: str = ""
    header: list[str] = Field(default_factory=list)
    rows: list[list[str]] = Field(default_factory=list)
    style: str | None = None


class ImageBlock(_Node):
    """An image: ``src`` is ``file:<id>`` (a stored file) or ``item:<ref>`` (bytes the
    extractor kept beside the tree)."""

    type: Literal["image"] = "image"
    alt: str = ""
    src: str = ""
    mime_type: str = ""


class AttachmentBlock(_Node):
    """An embedded file (a mail attachment, a ZIP entry), kept by the extractor as ``src``."""

    type: Literal["attachment"] = "attachment"
    name: str
    src: str = ""
    mime_type: str = ""
    size: int = 0


Block = Annotated[
    TextBlock | HeadingBlock | ListBlock | CodeBlock | TableBlock | ImageBlock | AttachmentBlock,
    Field(discriminator="type"),
]


class Part(_Node):
    """A physical part of a container: a page, slide, sheet, message or entry group."""

    type: Literal["part"] = "part"
    kind: Literal["page", "slide", "sheet", "message", "body"] = "page"
    label: str = ""
    children: list[Block] = Field(default_factory=list)


Node = Annotated[
    Part
    | TextBlock
    | HeadingBlock
    | ListBlock
    | CodeBlock
    | TableBlock
    | ImageBlock
    | AttachmentBlock,
    Field(discriminator="type"),
]


class WalkedBlock(BaseModel):
    """A block met walking a document: its number (1-based, document order), the part it is
    in, its section path and the numbers of its kind (``table 2``, ``image 1``)."""

    index: int
    part: str
    section: list[str]
    ref: str
    block: Any


class UdmDocument(_Node):
    """A whole document: its kind (``pdf``, ``docx``, ``markdown``, ...), title, metadata
    (mail headers, sheet counts, ...) and top-level nodes."""

    kind: str = "markdown"
    title: str = ""
    meta: dict[str, str] = Field(default_factory=dict)
    children: list[Node] = Field(default_factory=list)

    def walk(self) -> Iterator[WalkedBlock]:
        """Every block in document order, with where it is."""
        counts: dict[str, int] = {}
        trail: list[tuple[int, str]] = []
        index = 0
        for node in self.children:
            part = f"{node.kind} {node.label}".strip() if isinstance(node, Part) else ""
            blocks = node.children if isinstance(node, Part) else [node]
            for block in blocks:
                index += 1
                if isinstance(block, HeadingBlock):
                    while trail and trail[-1][0] >= block.level:
                        trail.pop()
                    trail.append((block.level, block.text))
                counts[block.type] = counts.get(block.type, 0) + 1
                yield WalkedBlock(
                    index=index,
                    part=part,
                    section=[t for _, t in trail],
                    ref=f"{block.type} {counts[block.type]}",
                    block=block,
                )

    def blocks(self) -> list[Any]:
        """The blocks alone, in document order."""
        return [w.block for w in self.walk()]
