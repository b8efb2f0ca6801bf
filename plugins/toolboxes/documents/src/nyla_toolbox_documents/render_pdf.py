"""UDM to PDF with reportlab's page layout (Platypus): paragraphs that wrap and break across
pages, ruled tables that repeat their header row, images scaled to the frame, and every
heading an entry of the PDF outline (so extraction finds the headings again). Text is set
in DejaVu where the machine has it (see :mod:`pdf_fonts`)."""

from __future__ import annotations

import io
from typing import Any
from xml.sax.saxutils import escape

from nyla.sdk.documents import UdmDocument
from nyla_toolbox_documents.pdf_fonts import bold_of, family, pdf_fonts
from nyla_toolbox_documents.render_images import Images
from nyla_toolbox_documents.style import Style


def render_pdf(udm: UdmDocument, style: Style, images: Images) -> bytes:
    """The PDF of ``udm`` in ``style``."""
    from reportlab.lib.units import mm
    from reportlab.platypus import SimpleDocTemplate

    class _Outlined(SimpleDocTemplate):  # type: ignore[misc]
        levels: list[int] = []

        def afterFlowable(self, flowable: Any) -> None:
            entry = getattr(flowable, "outline_entry", None)
            if entry is None:
                return
            level, text = entry
            # reportlab's outline cannot go down more than one level at a time
            level = min(level, (self.levels[-1] + 1) if self.levels else 0)
            self.levels.append(level)
            key = f"h{len(self.levels)}"
            self.canv.bookmarkPage(key)
            self.canv.addOutlineEntry(text, key, level=level)

    width, height = style.page_mm()
    out = io.BytesIO()
    margin = style.margin_mm * mm
    doc = _Outlined(
        out,
        pagesize=(width * mm, height * mm),
        leftMargin=margin,
        rightMargin=margin,
        topMargin=margin,
        bottomMargin=margin,
        title=udm.title,
    )
    doc.build(_flowables(udm, style, images, doc.width))
    return out.getvalue()


def _styles(style: Style) -> dict[str, Any]:
    from reportlab.lib import colors
    from reportlab.lib.styles import ParagraphStyle

    fonts = pdf_fonts()
    body = fonts[family(style.font_family)][0]
    head = fonts[family(style.headings_font)][1]
    size = style.font_size
    base = ParagraphStyle(
        "body",
        fontName=body,
        fontSize=size,
        leading=size * 1.35,
        textColor=colors.HexColor(style.text_color),
        spaceAfter=size * 0.6,
    )
    out: dict[str, Any] = {"body": base}
    for level in range(1, 7):
        hsize = size * (2.0 - 0.17 * level)
        out[f"h{level}"] = ParagraphStyle(
            f"h{level}",
            parent=base,
            fontName=head,
            fontSize=hsize,
            leading=hsize * 1.25,
            textColor=colors.HexColor(style.heading_color),
            spaceBefore=hsize * 0.6,
            spaceAfter=hsize * 0.4,
        )
    out["code"] = ParagraphStyle(
        "code", parent=base, fontName=fonts["mono"][0], fontSize=size * 0.9
    )
    return out


def _flowables(udm: UdmDocument, style: Style, images: Images, width: float) -> list[Any]:
    from reportlab.platypus import ListFlowable, ListItem, Paragraph, Preformatted

    styles = _styles(style)
    out: list[Any] = []
    tables = 0
    for block in udm.blocks():
        if block.type == "heading":
            para = Paragraph(escape(block.text), styles[f"h{block.level}"])
            para.outline_entry = (block.level - 1, block.text)
            out.append(para)
        elif block.type == "text":
            out.append(Paragraph(escape(block.text).replace("\n", "<br/>"), styles["body"]))
        elif block.type == "list":
            items = [ListItem(Paragraph(escape(i), styles["body"])) for i in block.items]
            kind = "1" if block.ordered else "bullet"
            out.append(ListFlowable(items, bulletType=kind, start=None if block.ordered else "•"))
        elif block.type == "code":
            out.append(Preformatted(block.text, styles["code"]))
        elif block.type == "table":
            tables += 1
            out.append(_table(block, style, tables, styles["body"], width))
        elif block.type == "image":
            out.extend(_image(block, images, width, styles["body"]))
    return out


def _table(block: Any, style: Style, number: int, body: Any, width: float) -> Any:
    from reportlab.lib import colors
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import Paragraph, Table, TableStyle

    ts = style.table_style(number, block.style)
    size = ts.font_size or body.fontSize * 0.95
    cell = ParagraphStyle("cell", parent=body, fontSize=size, leading=size * 1.25, spaceAfter=0)
    head = ParagraphStyle(
        "head",
        parent=cell,
        fontName=bold_of(body.fontName),
        textColor=colors.HexColor(ts.header_color),
    )
    columns = max([len(block.header), *(len(r) for r in block.rows)], default=1)
    grid = (
        [[Paragraph(escape(c), head) for c in _pad(block.header, columns)]] if block.header else []
    )
    grid += [[Paragraph(escape(c), cell) for c in _pad(r, columns)] for r in block.rows]
    commands: list[Any] = [
        ("GRID", (0, 0), (-1, -1), 0.5, colors.HexColor(ts.border_color)),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
    ]
    if block.header:
        commands.append(("BACKGROUND", (0, 0), (-1, 0), colors.HexColor(ts.header_background)))
    if ts.stripe_background:
        first = 1 if block.header else 0
        for r in range(first + 1, len(grid), 2):
            commands.append(("BACKGROUND", (0, r), (-1, r), colors.HexColor(ts.stripe_background)))
    table = Table(grid, colWidths=[width / columns] * columns, repeatRows=1 if block.header else 0)
    table.setStyle(TableStyle(commands))
    table.spaceAfter = body.fontSize
    return table


def _pad(row: list[str], columns: int) -> list[str]:
    return (row + [""] * columns)[:columns]


def _image(block: Any, images: Images, width: float, body: Any) -> list[Any]:
    from reportlab.lib.utils import ImageReader
    from reportlab.platypus import Image as PdfImage
    from reportlab.platypus import Paragraph

    image = images.get(block.src)
    if image is None:
        return [Paragraph(escape(f"[{block.alt or 'image'}]"), body)]
    reader = ImageReader(io.BytesIO(image.content))
    w, h = reader.getSize()
    scale = min(1.0, width / w)
    return [PdfImage(io.BytesIO(image.content), width=w * scale, height=h * scale)]
