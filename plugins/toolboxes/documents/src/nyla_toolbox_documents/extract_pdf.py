"""PDF to the UDM: one ``page`` part per page with its text lines (pdfplumber), its ruled
tables (pdfplumber's table finder), the outline's entries as headings (pypdf) and its
embedded images (pypdf)."""

from __future__ import annotations

import io
import logging
from typing import Any

from nyla.sdk.documents import HeadingBlock, ImageBlock, Part, TableBlock, TextBlock, UdmDocument
from nyla_toolbox_documents.extract import DocumentError, Extracted, Item

#: pages read at most (layout analysis takes some 15 ms of CPU a page)
MAX_PAGES = 500
#: the blank space between two lines, as a share of a line's height, that ends a paragraph
PARAGRAPH_GAP = 0.6
_IMAGE_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}


def pdf(content: bytes) -> Extracted:
    """Extractor of PDF files (encrypted ones only when they open without a password)."""
    import pdfplumber
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    reader = PdfReader(io.BytesIO(content))
    if reader.is_encrypted and not reader.decrypt(""):
        raise DocumentError("encrypted PDF: a password is required to read it")
    meta = reader.metadata
    doc = UdmDocument(kind="pdf", title=str(meta.title) if meta and meta.title else "")
    extracted = Extracted(doc)
    headings = _outline(reader)
    images = 0
    with pdfplumber.open(io.BytesIO(content)) as plumber:
        if len(plumber.pages) > MAX_PAGES:
            doc.meta["cut"] = f"{len(plumber.pages)} pages, the first {MAX_PAGES} read"
        for number, page in enumerate(plumber.pages[:MAX_PAGES], start=1):
            part = Part(kind="page", label=str(number))
            part.children.extend(_page_blocks(page, headings.get(number - 1, [])))
            for image in _page_images(reader.pages[number - 1]):
                images += 1
                src = extracted.keep(f"image {images}", image)
                part.children.append(ImageBlock(alt=image.name, src=src, mime_type=image.mime_type))
            doc.children.append(part)
    return extracted


def _outline(reader: Any) -> dict[int, list[tuple[int, str]]]:
    """Outline entries by page index: ``(level, title)`` in order."""
    found: dict[int, list[tuple[int, str]]] = {}

    def visit(entries: Any, level: int) -> None:
        for entry in entries:
            if isinstance(entry, list):
                visit(entry, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(entry)
            except Exception:  # an entry without a destination names no page
                continue
            found.setdefault(page, []).append((min(level, 6), str(entry.title).strip()))

    visit(reader.outline or [], 1)
    return found


def _page_blocks(page: Any, headings: list[tuple[int, str]]) -> list[Any]:
    """Headings, text runs and tables of one page, top to bottom."""
    tables = page.find_tables()
    boxes = [t.bbox for t in tables]

    def outside(obj: dict[str, Any]) -> bool:
        x, top = (obj["x0"] + obj["x1"]) / 2, (obj["top"] + obj["bottom"]) / 2
        return not any(b[0] <= x <= b[2] and b[1] <= top <= b[3] for b in boxes)

    lines = page.filter(outside).extract_text_lines() if boxes else page.extract_text_lines()
    placed: list[tuple[float, Any]] = [(t.bbox[1], _table(t.extract())) for t in tables]
    pending = list(headings)
    run: list[str] = []
    run_top = bottom = 0.0

    def flush() -> None:
        if run:
            placed.append((run_top, TextBlock(text=" ".join(run))))
            run.clear()

    for line in lines:
        text = " ".join(line["text"].split())
        # a gap of most of a line's height between two lines ends a paragraph
        if line["top"] - bottom > PARAGRAPH_GAP * (line["bottom"] - line["top"]):
            flush()
        bottom = line["bottom"]
        if pending and text == pending[0][1]:
            flush()
            level, title = pending.pop(0)
            placed.append((line["top"], HeadingBlock(level=level, text=title)))
        elif text:
            run_top = run_top if run else line["top"]
            run.append(text)
    flush()
    placed.sort(key=lambda pair: pair[0])
    return [block for _, block in placed]


def _table(rows: list[list[str | None]]) -> TableBlock:
    cells = [[" ".join((c or "").split()) for c in row] for row in rows if any(row)]
    return TableBlock(header=cells[0] if cells else [], rows=cells[1:])


def _page_images(page: Any) -> list[Item]:
    out = []
    try:
        images = list(page.images)
    except Exception:  # an image filter pypdf cannot decode: the page's text still counts
        return []
    for image in images:
        suffix = "." + image.name.rsplit(".", 1)[-1].lower() if "." in image.name else ".png"
        out.append(Item(image.name, _IMAGE_MIME.get(suffix, "image/png"), image.data))
    return out
