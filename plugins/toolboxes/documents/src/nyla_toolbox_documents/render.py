"""``renderDocument``: Markdown or a UDM rendered to PDF, DOCX, XLSX, PPTX and HTML, each
file saved into the user's files and bound to the conversation as a chat document."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from nyla.sdk import FileAccessError, Tool, ToolContext, ToolResult, download_name
from nyla.sdk.documents import UdmDocument, save_tool_file
from nyla_toolbox_documents.extract import MIME_TYPES, DocumentError
from nyla_toolbox_documents.render_images import Image, Images, sniff
from nyla_toolbox_documents.style import Style

Format = Literal["pdf", "docx", "xlsx", "pptx", "html"]
#: the most images one document embeds, and the largest one
MAX_IMAGES = 50
MAX_IMAGE_BYTES = 20 * 1024 * 1024


class RenderArgs(BaseModel):
    """Arguments of ``renderDocument``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    markdown: str | None = Field(
        default=None,
        description="The document as Markdown; images as ![alt](file:<fileId>).",
    )
    udm: dict[str, Any] | None = Field(default=None, description="Or the document as UDM JSON.")
    file_id: str | None = Field(
        default=None,
        alias="fileId",
        description="Or a stored document to convert (PDF, DOCX, XLSX, PPTX, HTML, Markdown, "
        ".eml); its embedded images come along.",
    )
    formats: list[Format] = Field(min_length=1, description="pdf, docx, xlsx, pptx, html.")
    name: str = Field(default="document", description="File name without extension.")
    style: Style = Field(default_factory=Style, description="Fonts, colours, page, tables.")

    @model_validator(mode="after")
    def _one_source(self) -> RenderArgs:
        if [self.markdown, self.udm, self.file_id].count(None) != 2:
            raise ValueError("pass one of markdown, udm or fileId")
        return self


def renderer(fmt: str) -> Callable[[UdmDocument, Style, Images], bytes]:
    """The renderer of ``fmt`` (its library loads on first use)."""
    if fmt == "pdf":
        from nyla_toolbox_documents.render_pdf import render_pdf

        return render_pdf
    if fmt == "html":
        from nyla_toolbox_documents.render_html import render_html

        return render_html
    from nyla_toolbox_documents import render_office

    return {
        "docx": render_office.render_docx,
        "xlsx": render_office.render_xlsx,
        "pptx": render_office.render_pptx,
    }[fmt]


def to_udm(args: RenderArgs) -> UdmDocument:
    """The document to render, from Markdown or UDM JSON."""
    if args.markdown is not None:
        from nyla_toolbox_documents.extract_text import parse_markdown

        udm = parse_markdown(args.markdown)
        udm.title = next((b.text for b in udm.blocks() if b.type == "heading"), args.name)
        return udm
    try:
        return UdmDocument.model_validate(args.udm)
    except ValidationError as exc:
        raise DocumentError(f"not a UDM document: {exc.errors()[0]['msg']}") from exc


async def load_images(ctx: ToolContext, udm: UdmDocument) -> Images:
    """The ``file:<id>`` images of ``udm`` read from the user's files (PNG or JPEG)."""
    wanted = sorted({b.src for b in udm.blocks() if b.type == "image" and b.src})
    files = [src for src in wanted if src.startswith("file:")]
    if len(files) > MAX_IMAGES:
        raise DocumentError(f"{len(files)} images; at most {MAX_IMAGES} per document")
    images: Images = {}
    for src in files:
        content = await ctx.services.files.read_bytes(src[5:], ctx.run)
        mime = sniff(content)
        if mime is None or len(content) > MAX_IMAGE_BYTES:
            raise DocumentError(f"{src} is not a PNG or JPEG image of at most 20 MB")
        images[src] = Image(mime, content)
    return images


async def render_document(args: RenderArgs, ctx: ToolContext) -> ToolResult:
    """Render and save each requested format."""
    try:
        if args.file_id is not None:
            udm, images = await _stored(ctx, args.file_id)
        else:
            udm = to_udm(args)
            images = {}
        images.update(await load_images(ctx, udm))
    except FileAccessError as exc:
        return ToolResult.fail(str(exc), "NOT_FOUND", suggestion="listFiles")
    except DocumentError as exc:
        return ToolResult.fail(str(exc), "INVALID_VALUE")
    base = download_name(args.name, "document")
    stem, _, ext = base.rpartition(".")
    base = stem if stem and ext.lower() in (*MIME_TYPES, "md") else base
    saved = []
    for fmt in dict.fromkeys(args.formats):
        try:
            content = await asyncio.to_thread(renderer(fmt), udm, args.style, images)
            saved.append(
                await save_tool_file(
                    ctx,
                    f"{base}.{fmt}",
                    content,
                    MIME_TYPES.get(fmt, "text/html"),
                    label=f"renderDocument:{base}",
                )
            )
        except Exception as exc:  # a library's refusal of this document: the others still count
            return ToolResult.fail(f"rendering {fmt} failed: {exc}", "RENDER_FAILED")
    text = "\n".join(s.summary for s in saved)
    return ToolResult.ok(text, data={"files": [s.to_wire() for s in saved]})


async def _stored(ctx: ToolContext, file_id: str) -> tuple[UdmDocument, Images]:
    """A stored document's UDM and the PNG and JPEG images embedded in it."""
    from nyla_toolbox_documents.read_tools import load

    found = await load(ctx, file_id)
    images: Images = {}
    for src, item in found.items.items():
        mime = sniff(item.content)
        if mime is not None:
            images[src] = Image(mime, item.content)
    return found.udm, images


def render_tools() -> list[Tool]:
    """``renderDocument``."""
    return [
        Tool.from_model(
            "renderDocument",
            "Render Markdown, a UDM or a stored document to PDF, DOCX, XLSX, PPTX and/or HTML "
            "files with a style (fonts, colours, page size, table styles); images as "
            "![alt](file:<fileId>).",
            RenderArgs,
            render_document,
            timeout_s=120,
        )
    ]
