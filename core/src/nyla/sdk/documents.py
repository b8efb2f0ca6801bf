"""Documents for plugin authors: the Unified Document Model (:mod:`nyla.models.udm`) and the
file bridge a producing tool uses (imported on its own: ``from nyla.sdk.documents import ...``).

:func:`save_tool_file` is what every tool that makes a file does (seed 003): the file is saved
into the run user's files, bound to the run's conversation as a chat document under a label
(``renderDocument:<name>``), and the tool answers with both references.
"""

from __future__ import annotations

from pydantic import BaseModel

from nyla.models.tools import ToolContext
from nyla.models.udm import (
    AttachmentBlock,
    Block,
    CodeBlock,
    HeadingBlock,
    ImageBlock,
    ListBlock,
    Node,
    Part,
    TableBlock,
    TextBlock,
    UdmDocument,
    WalkedBlock,
)

__all__ = [
    "AttachmentBlock",
    "Block",
    "CodeBlock",
    "HeadingBlock",
    "ImageBlock",
    "ListBlock",
    "Node",
    "Part",
    "SavedFile",
    "TableBlock",
    "TextBlock",
    "UdmDocument",
    "WalkedBlock",
    "save_tool_file",
]


class SavedFile(BaseModel):
    """A file a tool produced: its file id, name, size, the chat document bound to the run's
    conversation (``None`` without one) and the lines the model is told."""

    file_id: str
    name: str
    mime_type: str
    size: int
    document_id: str | None = None
    summary: str

    def to_wire(self) -> dict[str, object]:
        """camelCase, with the ``docItem:`` reference a ``documentList`` takes."""
        return {
            "fileId": self.file_id,
            "name": self.name,
            "mimeType": self.mime_type,
            "size": self.size,
            "documentRef": f"docItem:{self.document_id}" if self.document_id else None,
        }


async def save_tool_file(
    ctx: ToolContext, name: str, content: bytes, mime_type: str, *, label: str
) -> SavedFile:
    """Save ``content`` as ``name`` into the run user's files and bind it to the run's
    conversation as a chat document labelled ``label`` (``renderDocument:<name>``). A name or
    content the file store refuses raises ``ValueError``."""
    from nyla.files.bridge import attach_to_run, format_tool_file_result

    item = await ctx.services.files.save(name, content, ctx.run, mime_type=mime_type, dedupe=False)
    doc_id = await attach_to_run(ctx, item, label)
    return SavedFile(
        file_id=item.id,
        name=item.name,
        mime_type=item.mime_type or mime_type,
        size=item.size,
        document_id=doc_id,
        summary=format_tool_file_result("Created", item, doc_id),
    )
