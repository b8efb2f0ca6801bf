"""Extractors of the binary office formats (PDF, DOCX), split from :mod:`nyla.knowledge.extract`
because their libraries are heavy: they are imported on first use."""

from __future__ import annotations

import io
import re
from typing import Any

from nyla.errors import ExtractionError
from nyla.knowledge.sections import SectionWriter
from nyla.models.knowledge import ContentObject, ExtractedDocument

# -- pdf -------------------------------------------------------------------------------------


def extract_pdf(content: bytes) -> ExtractedDocument:
    """Text per page, title and outline of a PDF."""
    import logging

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    # pypdf logs recoverable damage as warnings; the reason reaches the user as an error
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    try:
        reader = PdfReader(io.BytesIO(content))
    except PdfReadError as exc:
        raise ExtractionError(f"corrupt PDF: {exc}") from exc
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")
        except Exception as exc:  # missing crypto backend for AES, broken encryption dict
            raise ExtractionError(f"encrypted PDF cannot be opened: {exc}") from exc
        if not opened:
            raise ExtractionError("encrypted PDF: a password is required to read it")
    objects: list[ContentObject] = []
    pages: list[dict[str, Any]] = []
    for number, page in enumerate(reader.pages, start=1):
        text = (page.extract_text() or "").strip()
        pages.append({"page": number, "chars": len(text)})
        if text:
            objects.append(ContentObject(text=text, context_ref=f"page {number}"))
    meta = reader.metadata
    title = str(meta.title) if meta is not None and meta.title else None
    sections = [
        {"title": item.title, "level": 1, "ref": "outline"}
        for item in (reader.outline or [])
        if hasattr(item, "title")
    ]
    if pages and not objects:
        raise ExtractionError("PDF has no extractable text (scanned images need OCR)")
    return ExtractedDocument(
        kind="pdf",
        objects=objects,
        structure={"title": title, "pages": pages, "sections": sections},
    )


# -- docx ------------------------------------------------------------------------------------


def extract_docx(content: bytes) -> ExtractedDocument:
    """Text per heading section, tables as table objects, of a DOCX file."""
    import zipfile

    from docx import Document

    try:
        document = Document(io.BytesIO(content))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ExtractionError(f"not a readable DOCX file: {exc}") from exc
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    doc = SectionWriter("body")
    tables: list[dict[str, Any]] = []
    paragraphs = 0

    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            style = (block.style.name if block.style is not None else "") or ""
            text = block.text.strip()
            match = re.match(r"(?:Heading|Überschrift)\s*(\d)", style)
            if (match or style == "Title") and text:
                doc.heading(int(match[1]) if match else 1, text)
            elif text:
                paragraphs += 1
                doc.body.append(text)
        elif isinstance(block, Table):
            doc.flush()
            rows = [[cell.text.strip() for cell in row.cells] for row in block.rows]
            rows = [r for r in rows if any(r)]
            if rows:
                n = len(tables) + 1
                tables.append({"ref": f"table {n}", "rows": len(rows) - 1, "section": doc.ref()})
                doc.objects.append(
                    ContentObject(
                        text="\n".join(" | ".join(r) for r in rows),
                        context_ref=f"{doc.ref()} / table {n}",
                        content_type="table",
                    )
                )
    doc.flush()
    title = document.core_properties.title or next(
        (s["title"] for s in doc.sections if s["level"] == 1), None
    )
    return ExtractedDocument(
        kind="docx",
        objects=doc.objects,
        structure={
            "title": title,
            "sections": doc.sections,
            "tables": tables,
            "paragraphs": paragraphs,
        },
    )
