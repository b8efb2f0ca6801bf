"""DOCX (python-docx), XLSX (openpyxl) and PPTX (python-pptx) to the UDM."""

from __future__ import annotations

import io
import re
from typing import Any

from nyla.sdk.documents import (
    HeadingBlock,
    ImageBlock,
    ListBlock,
    Part,
    TableBlock,
    TextBlock,
    UdmDocument,
)
from nyla_toolbox_documents.extract import Extracted, Item

#: rows of a sheet read at most (a larger sheet is cut, and its part says so)
MAX_SHEET_ROWS = 5_000
_HEADING_STYLE = re.compile(r"(?:Heading|Überschrift)\s*(\d)")

# -- docx ------------------------------------------------------------------------------------


def docx(content: bytes) -> Extracted:
    """Headings (by paragraph style), paragraphs, lists, tables and inline images."""
    from docx import Document
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = Document(io.BytesIO(content))
    doc = UdmDocument(kind="docx", title=document.core_properties.title or "")
    extracted = Extracted(doc)
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            rows = [[" ".join(c.text.split()) for c in row.cells] for row in block.rows]
            rows = [r for r in rows if any(r)]
            doc.children.append(TableBlock(header=rows[0] if rows else [], rows=rows[1:]))
        elif isinstance(block, Paragraph):
            _docx_paragraph(block, extracted)
    return extracted


def _docx_paragraph(paragraph: Any, extracted: Extracted) -> None:
    doc = extracted.udm
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    text = paragraph.text.strip()
    match = _HEADING_STYLE.match(style)
    if (match or style == "Title") and text:
        doc.children.append(HeadingBlock(level=int(match[1]) if match else 1, text=text))
    elif style.startswith("List") and text:
        ordered = "Number" in style
        last = doc.children[-1] if doc.children else None
        if isinstance(last, ListBlock) and last.ordered == ordered:
            last.items.append(text)
        else:
            doc.children.append(ListBlock(ordered=ordered, items=[text]))
    elif text:
        doc.children.append(TextBlock(text=text))
    for blip in paragraph._p.xpath(".//a:blip"):
        rid = blip.get("{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed")
        image_part = paragraph.part.related_parts.get(rid) if rid else None
        if image_part is None:
            continue
        n = sum(1 for b in doc.blocks() if b.type == "image") + 1
        name = image_part.partname.rsplit("/", 1)[-1]
        src = extracted.keep(f"image {n}", Item(name, image_part.content_type, image_part.blob))
        doc.children.append(ImageBlock(alt=name, src=src, mime_type=image_part.content_type))


# -- xlsx ------------------------------------------------------------------------------------


def xlsx(content: bytes) -> Extracted:
    """One ``sheet`` part per worksheet holding its used range as a table (first row as
    header; computed values, not formulas)."""
    from openpyxl import load_workbook

    book = load_workbook(io.BytesIO(content), read_only=True, data_only=True)
    doc = UdmDocument(kind="xlsx", title=book.properties.title or "")
    try:
        for sheet in book.worksheets:
            rows: list[list[str]] = []
            for row in sheet.iter_rows(values_only=True):
                if len(rows) >= MAX_SHEET_ROWS:
                    doc.meta[f"sheet {sheet.title}"] = f"cut at {MAX_SHEET_ROWS} rows"
                    break
                cells = ["" if v is None else _cell(v) for v in row]
                if any(cells):
                    rows.append(cells)
            width = max((len(r) for r in rows), default=0)
            while width and not any(len(r) >= width and r[width - 1] for r in rows):
                width -= 1
            rows = [(r + [""] * width)[:width] for r in rows]
            part = Part(kind="sheet", label=sheet.title)
            if rows:
                part.children.append(TableBlock(caption=sheet.title, header=rows[0], rows=rows[1:]))
            doc.children.append(part)
    finally:
        book.close()
    return Extracted(doc)


def _cell(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# -- pptx ------------------------------------------------------------------------------------


def pptx(content: bytes) -> Extracted:
    """One ``slide`` part per slide: its title as a heading, text frames as text or lists,
    tables, pictures and the speaker notes."""
    from pptx import Presentation

    deck = Presentation(io.BytesIO(content))
    doc = UdmDocument(kind="pptx", title=deck.core_properties.title or "")
    extracted = Extracted(doc)
    images = 0
    for number, slide in enumerate(deck.slides, start=1):
        part = Part(kind="slide", label=str(number))
        title_shape = slide.shapes.title
        if title_shape is not None and title_shape.text_frame.text.strip():
            part.children.append(HeadingBlock(level=1, text=title_shape.text_frame.text.strip()))
        for shape in slide.shapes:
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if shape.has_table:
                rows = [[c.text.strip() for c in r.cells] for r in shape.table.rows]
                part.children.append(TableBlock(header=rows[0] if rows else [], rows=rows[1:]))
            elif shape.shape_type == 13:  # MSO_SHAPE_TYPE.PICTURE
                images += 1
                image = shape.image
                src = extracted.keep(
                    f"image {images}", Item(image.filename, image.content_type, image.blob)
                )
                part.children.append(
                    ImageBlock(alt=shape.name, src=src, mime_type=image.content_type)
                )
            elif shape.has_text_frame:
                part.children.extend(_pptx_text(shape.text_frame))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                doc.meta[f"notes slide {number}"] = notes
        doc.children.append(part)
    return extracted


def _pptx_text(frame: Any) -> list[Any]:
    lines = [p.text.strip() for p in frame.paragraphs if p.text.strip()]
    if not lines:
        return []
    bulleted = any(p.level > 0 for p in frame.paragraphs) or len(lines) > 1
    return [ListBlock(items=lines)] if bulleted else [TextBlock(text=lines[0])]
