"""The tools that work inside a document, without a model: ``browseContainer``,
``readContentObjects``, ``extractContainerItem``, and ``getUdmStructure``,
``walkUdmBlocks``, ``filterUdmByType`` over a UDM given as JSON."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from collections import OrderedDict
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nyla.sdk import FileAccessError, Tool, ToolContext, ToolResult
from nyla.sdk.documents import UdmDocument, save_tool_file
from nyla_toolbox_documents import udm_ops
from nyla_toolbox_documents.extract import DocumentError, Extracted, extract

#: characters of block text one readContentObjects answer carries at most
MAX_READ_CHARS = 40_000


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class BrowseArgs(_Args):
    """Arguments of ``browseContainer``."""

    file_id: str = Field(alias="fileId", description="Id of the user's file.")


class ReadArgs(_Args):
    """Arguments of ``readContentObjects``."""

    file_id: str = Field(alias="fileId")
    refs: list[str] = Field(
        min_length=1,
        description="References from browseContainer: 'page 2', 'slide 3', 'sheet Sales', "
        "'section Intro > Scope', 'table 2', 'image 1', 'attachment 1', 'block 7', 'blocks 3-9'.",
    )


class ExtractItemArgs(_Args):
    """Arguments of ``extractContainerItem``."""

    file_id: str = Field(alias="fileId")
    ref: str = Field(description="'image N', 'attachment N' or 'table N' (saved as CSV).")


class UdmArgs(_Args):
    """A UDM given as JSON (what readContentObjects, browseContainer or a model built)."""

    udm: dict[str, Any] = Field(description="The document: {kind, title, children: [...]}.")


class FilterArgs(UdmArgs):
    """Arguments of ``filterUdmByType``."""

    types: list[str] = Field(min_length=1, description=f"Of {', '.join(udm_ops.BLOCK_TYPES)}.")


#: extracted documents kept by content: a model browses a file, then reads parts of it, and
#: each call would parse it again; only files up to CACHE_MAX_BYTES, the last CACHE_SIZE
_CACHE: OrderedDict[tuple[str, str, str], Extracted] = OrderedDict()
CACHE_SIZE = 16
CACHE_MAX_BYTES = 5 * 1024 * 1024


async def load(ctx: ToolContext, file_id: str) -> Extracted:
    """The user's file read into a UDM (off the event loop: the libraries are synchronous).
    The file store checks access first on every call; only the parsing is cached, by the
    file's content hash, name and type."""
    item = await ctx.services.files.get(file_id, ctx.run)
    if item is None:
        raise FileAccessError(f"file {file_id!r} not found")
    key = (item.content_hash, item.name, item.mime_type)
    cacheable = bool(item.content_hash) and item.size <= CACHE_MAX_BYTES
    if cacheable and key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    content = await ctx.services.files.read_bytes(file_id, ctx.run)
    found = await asyncio.to_thread(extract, item.name, content, item.mime_type)
    if cacheable:
        _CACHE[key] = found
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return found


def _failure(exc: Exception) -> ToolResult:
    if isinstance(exc, FileAccessError):
        return ToolResult.fail(str(exc), "NOT_FOUND", field="fileId", suggestion="listFiles")
    return ToolResult.fail(str(exc), "INVALID_VALUE")


async def browse_container(args: BrowseArgs, ctx: ToolContext) -> ToolResult:
    """Structure of a document: parts, sections, tables, embedded items, counts."""
    try:
        found = await load(ctx, args.file_id)
    except (FileAccessError, DocumentError) as exc:
        return _failure(exc)
    data = udm_ops.structure(found.udm)
    return ToolResult.ok(json.dumps(data, ensure_ascii=False), data=data)


async def read_content_objects(args: ReadArgs, ctx: ToolContext) -> ToolResult:
    """Chosen objects of a document verbatim, as Markdown."""
    try:
        found = await load(ctx, args.file_id)
        chosen = udm_ops.select(found.udm, args.refs)
    except (FileAccessError, DocumentError) as exc:
        return _failure(exc)
    text = udm_ops.to_markdown([w.block for w in chosen])
    cut = len(text) > MAX_READ_CHARS
    data = {"blocks": len(chosen), "truncated": cut}
    if cut:
        text = text[:MAX_READ_CHARS] + "\n\n[... cut: ask for fewer refs]"
    return ToolResult.ok(text, data=data)


async def extract_container_item(args: ExtractItemArgs, ctx: ToolContext) -> ToolResult:
    """One embedded element saved as a new file (a chat document of the conversation)."""
    try:
        found = await load(ctx, args.file_id)
        name, mime, content = _item(found, args.ref)
        saved = await save_tool_file(
            ctx, name, content, mime, label=f"extractContainerItem:{args.ref}"
        )
    except (FileAccessError, DocumentError, ValueError) as exc:
        return _failure(exc)
    return ToolResult.ok(saved.summary, data=saved.to_wire())


def _item(found: Extracted, ref: str) -> tuple[str, str, bytes]:
    chosen = udm_ops.select(found.udm, [ref])
    block = chosen[0].block
    if len(chosen) != 1 or block.type not in ("image", "attachment", "table"):
        raise DocumentError(f"{ref!r} is not one image, attachment or table")
    if block.type == "table":
        out = io.StringIO()
        csv.writer(out).writerows([block.header, *block.rows] if block.header else block.rows)
        return f"{chosen[0].ref.replace(' ', '-')}.csv", "text/csv", out.getvalue().encode()
    item = found.items.get(block.src)
    if item is None:
        raise DocumentError(f"{ref!r} is listed but its bytes are not in the file (too large?)")
    return item.name.rsplit("/", 1)[-1] or chosen[0].ref, item.mime_type, item.content


def _udm(raw: dict[str, Any]) -> UdmDocument:
    try:
        return UdmDocument.model_validate(raw)
    except ValidationError as exc:
        raise DocumentError(f"not a UDM document: {exc.errors()[0]['msg']}") from exc


async def get_udm_structure(args: UdmArgs, ctx: ToolContext) -> ToolResult:
    """Structure of a UDM given as JSON."""
    try:
        data = udm_ops.structure(_udm(args.udm))
    except DocumentError as exc:
        return _failure(exc)
    return ToolResult.ok(json.dumps(data, ensure_ascii=False), data=data)


async def walk_udm_blocks(args: UdmArgs, ctx: ToolContext) -> ToolResult:
    """Every block of a UDM in order, with its part, section path and ref."""
    try:
        walked = [udm_ops.walked_wire(w) for w in _udm(args.udm).walk()]
    except DocumentError as exc:
        return _failure(exc)
    return ToolResult.ok(json.dumps(walked, ensure_ascii=False), data=walked)


async def filter_udm_by_type(args: FilterArgs, ctx: ToolContext) -> ToolResult:
    """The blocks of the given types of a UDM."""
    try:
        walked = [udm_ops.walked_wire(w) for w in udm_ops.filter_blocks(_udm(args.udm), args.types)]
    except DocumentError as exc:
        return _failure(exc)
    return ToolResult.ok(json.dumps(walked, ensure_ascii=False), data=walked)


def read_tools() -> list[Tool]:
    """The six reading tools."""
    return [
        Tool.from_model(
            "browseContainer",
            "Structure of a document (PDF, DOCX, XLSX, PPTX, HTML, Markdown, .eml, ZIP): pages, "
            "slides, sheets, sections, tables, images, attachments, with the refs the other "
            "document tools take.",
            BrowseArgs,
            browse_container,
            read_only=True,
        ),
        Tool.from_model(
            "readContentObjects",
            "Read chosen parts of a document verbatim as Markdown: pages, sections, tables.",
            ReadArgs,
            read_content_objects,
            read_only=True,
        ),
        Tool.from_model(
            "extractContainerItem",
            "Save one element of a document as a new file: an embedded image, an e-mail "
            "attachment or ZIP entry, or a table as CSV.",
            ExtractItemArgs,
            extract_container_item,
        ),
        Tool.from_model(
            "getUdmStructure",
            "Structure of a Unified Document Model (UDM) given as JSON.",
            UdmArgs,
            get_udm_structure,
            read_only=True,
        ),
        Tool.from_model(
            "walkUdmBlocks",
            "Every block of a UDM given as JSON, in order, with its section path and ref.",
            UdmArgs,
            walk_udm_blocks,
            read_only=True,
        ),
        Tool.from_model(
            "filterUdmByType",
            "The blocks of chosen types (text, heading, list, code, table, image, attachment) "
            "of a UDM given as JSON.",
            FilterArgs,
            filter_udm_by_type,
            read_only=True,
        ),
    ]
