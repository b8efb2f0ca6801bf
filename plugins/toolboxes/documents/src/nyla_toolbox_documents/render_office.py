"""UDM to DOCX (python-docx), XLSX (openpyxl) and PPTX (python-pptx)."""

from __future__ import annotations

import io
from typing import Any

from nyla.sdk.documents import HeadingBlock, UdmDocument
from nyla_toolbox_documents.render_images import Images
from nyla_toolbox_documents.style import Style, TableStyle, rgb

# -- docx ------------------------------------------------------------------------------------


def render_docx(udm: UdmDocument, style: Style, images: Images) -> bytes:
    """Headings in the Heading N styles, lists in List Bullet / List Number, tables with
    their style's colours, images at most the text width."""
    from docx import Document
    from docx.shared import Mm, Pt, RGBColor

    doc = Document()
    doc.core_properties.title = udm.title
    section = doc.sections[0]
    section.page_width, section.page_height = (Mm(v) for v in style.page_mm())
    for side in ("left_margin", "right_margin", "top_margin", "bottom_margin"):
        setattr(section, side, Mm(style.margin_mm))
    normal = doc.styles["Normal"].font
    normal.name, normal.size = style.font_family, Pt(style.font_size)
    normal.color.rgb = RGBColor(*rgb(style.text_color))
    for level in range(1, 7):
        font = doc.styles[f"Heading {level}"].font
        font.name, font.color.rgb = style.headings_font, RGBColor(*rgb(style.heading_color))
    text_width = Mm(style.page_mm()[0] - 2 * style.margin_mm)
    tables = 0
    for block in udm.blocks():
        if block.type == "heading":
            doc.add_heading(block.text, level=block.level)
        elif block.type == "text":
            doc.add_paragraph(block.text)
        elif block.type == "list":
            kind = "List Number" if block.ordered else "List Bullet"
            for item in block.items:
                doc.add_paragraph(item, style=kind)
        elif block.type == "code":
            run = doc.add_paragraph().add_run(block.text)
            run.font.name = "Courier New"
        elif block.type == "table":
            tables += 1
            _docx_table(doc, block, style.table_style(tables, block.style))
        elif block.type == "image":
            image = images.get(block.src)
            if image is None:
                doc.add_paragraph(f"[{block.alt or 'image'}]")
            else:
                doc.add_picture(io.BytesIO(image.content))
                shape = doc.inline_shapes[-1]
                if shape.width > text_width:
                    shape.height = int(shape.height * text_width / shape.width)
                    shape.width = text_width
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def _docx_table(doc: Any, block: Any, ts: TableStyle) -> None:
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn
    from docx.shared import Pt, RGBColor

    rows = ([block.header] if block.header else []) + block.rows
    columns = max((len(r) for r in rows), default=1)
    table = doc.add_table(rows=len(rows), cols=columns)
    table.style = doc.styles["Table Grid"]
    for r, row in enumerate(rows):
        for c in range(columns):
            cell = table.cell(r, c)
            cell.text = row[c] if c < len(row) else ""
            fill = None
            if r == 0 and block.header:
                fill = ts.header_background
                for run in cell.paragraphs[0].runs:
                    run.font.bold = True
                    run.font.color.rgb = RGBColor(*rgb(ts.header_color))
            elif ts.stripe_background and (r - bool(block.header)) % 2:
                fill = ts.stripe_background
            if ts.font_size:
                for run in cell.paragraphs[0].runs:
                    run.font.size = Pt(ts.font_size)
            if fill:
                shading = OxmlElement("w:shd")
                shading.set(qn("w:val"), "clear")
                shading.set(qn("w:fill"), fill[1:])
                cell._tc.get_or_add_tcPr().append(shading)


# -- xlsx ------------------------------------------------------------------------------------


def render_xlsx(udm: UdmDocument, style: Style, images: Images) -> bytes:
    """A ``Document`` sheet with the text flow (one block a row; headings bold) when there is
    any, and one sheet per table named after its caption or the heading above it."""
    from openpyxl import Workbook
    from openpyxl.styles import Font

    book = Workbook()
    flow = book.active
    flow.title = "Document"
    names: set[str] = {"Document"}
    heading, tables, flowing = "", 0, False
    for block in udm.blocks():
        if block.type == "table":
            tables += 1
            name = _sheet_name(block.caption or heading or f"Table {tables}", names)
            _xlsx_table(book.create_sheet(name), block, style, tables)
            continue
        if block.type == "heading":
            heading = block.text
        lines = _flow_lines(block)
        for line in lines:
            flow.append([line])
            if block.type == "heading":
                flow.cell(flow.max_row, 1).font = Font(bold=True, size=style.font_size + 2)
        flowing = flowing or bool(lines)
    if not flowing and len(book.worksheets) > 1:
        book.remove(flow)
    flow.column_dimensions["A"].width = 100
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _flow_lines(block: Any) -> list[str]:
    if block.type in ("heading", "text", "code"):
        return [block.text]
    if block.type == "list":
        return [f"• {i}" for i in block.items]
    if block.type == "image":
        return [f"[{block.alt or 'image'}]"]
    return []


def _sheet_name(wanted: str, taken: set[str]) -> str:
    """A sheet name Excel accepts (31 characters, none of ``[]:*?/\\``), unique."""
    base = "".join(" " if ch in "[]:*?/\\" else ch for ch in wanted).strip()[:31] or "Table"
    name, n = base, 1
    while name.lower() in {t.lower() for t in taken}:
        n += 1
        name = f"{base[: 31 - len(str(n)) - 1]} {n}"
    taken.add(name)
    return name


def _xlsx_table(sheet: Any, block: Any, style: Style, number: int) -> None:
    from openpyxl.styles import Border, Font, PatternFill, Side

    ts = style.table_style(number, block.style)
    side = Side(style="thin", color=ts.border_color[1:])
    border = Border(left=side, right=side, top=side, bottom=side)
    rows = ([block.header] if block.header else []) + block.rows
    for r, row in enumerate(rows, start=1):
        sheet.append([_number(v) for v in row])
        for c in range(1, len(row) + 1):
            cell = sheet.cell(r, c)
            cell.border = border
            if r == 1 and block.header:
                cell.font = Font(bold=True, color=ts.header_color[1:])
                cell.fill = PatternFill("solid", fgColor=ts.header_background[1:])
            elif ts.stripe_background and (r - bool(block.header)) % 2 == 0:
                cell.fill = PatternFill("solid", fgColor=ts.stripe_background[1:])
    for c, _ in enumerate(rows[0] if rows else [], start=1):
        width = max(len(str(row[c - 1])) for row in rows if len(row) >= c)
        sheet.column_dimensions[sheet.cell(1, c).column_letter].width = min(60, width + 2)


def _number(value: str) -> Any:
    """A cell that is a plain number is stored as one (so the sheet can compute with it)."""
    text = value.strip()
    if text.isdigit() and (text == "0" or not text.startswith("0")):
        return int(text)
    return value


# -- pptx ------------------------------------------------------------------------------------


def render_pptx(udm: UdmDocument, style: Style, images: Images) -> bytes:
    """One slide per heading (its title), the blocks under it stacked below."""
    from pptx import Presentation
    from pptx.util import Mm

    deck = Presentation()
    width, height = style.page_mm()
    deck.slide_width, deck.slide_height = Mm(max(width, height)), Mm(min(width, height))
    deck.core_properties.title = udm.title
    slide: Any = None
    top = first = 0
    tables = 0
    bottom = int(deck.slide_height or 0) - Mm(8)
    for block in udm.blocks():
        # a block that does not fit goes on a continuation slide without a title, so the
        # deck reads back with the document's headings and no others
        full = slide is not None and top > first
        if full and top + _pptx_height(block, style, deck) > bottom:
            slide = None
        if isinstance(block, HeadingBlock) or slide is None:
            slide = deck.slides.add_slide(deck.slide_layouts[5 if block.type == "heading" else 6])
            top = first = Mm(35) if block.type == "heading" else Mm(15)
            if block.type == "heading":
                _pptx_title(slide, block.text, style)
                continue
        if block.type == "table":
            tables += 1
        top = _pptx_block(deck, slide, block, top, style, images, tables)
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _pptx_title(slide: Any, text: str, style: Style) -> None:
    from pptx.dml.color import RGBColor

    slide.shapes.title.text = text
    for paragraph in slide.shapes.title.text_frame.paragraphs:
        for run in paragraph.runs:
            run.font.name = style.headings_font
            run.font.color.rgb = RGBColor(*rgb(style.heading_color))


def _pptx_block(
    deck: Any, slide: Any, block: Any, top: int, style: Style, images: Images, tables: int
) -> int:
    """Places ``block`` at ``top`` of the slide; the top of the next block."""
    from pptx.util import Mm, Pt

    left, width = Mm(15), deck.slide_width - Mm(30)
    if block.type == "table":
        rows = ([block.header] if block.header else []) + block.rows
        columns = max((len(r) for r in rows), default=1)
        height = Mm(9) * len(rows)
        shape = slide.shapes.add_table(len(rows), columns, left, top, width, height)
        _pptx_table(shape.table, rows, block, style.table_style(tables, block.style))
        return int(top + height + Mm(5))
    if block.type == "image":
        image = images.get(block.src)
        if image is not None:
            picture = slide.shapes.add_picture(io.BytesIO(image.content), left, top)
            limit = deck.slide_height - top - Mm(5)
            if picture.height > limit > 0:
                picture.width = int(picture.width * limit / picture.height)
                picture.height = limit
            return int(top + picture.height + Mm(5))
    lines = _flow_lines(block) if block.type != "list" else list(block.items)
    height = _pptx_height(block, style, deck)
    frame = slide.shapes.add_textbox(left, top, width, height).text_frame
    frame.word_wrap = True
    for i, line in enumerate(lines):
        paragraph = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
        paragraph.text = line
        for run in paragraph.runs:
            run.font.size, run.font.name = Pt(style.font_size * 1.6), style.font_family
            if block.type == "code":
                run.font.name = "Courier New"
    return int(top + height + Mm(4))


def _pptx_height(block: Any, style: Style, deck: Any) -> int:
    """How tall ``block`` will be on a slide (EMU): table rows, at least 40 mm for an image
    (it is scaled to the room left), text lines wrapped at about half an em a character."""
    from pptx.util import Mm

    if block.type == "table":
        return int(Mm(9) * (len(block.rows) + bool(block.header)))
    if block.type == "image":
        return int(Mm(40))
    em_mm = style.font_size * 1.6 * 0.3528
    per_line = max(10, int((deck.slide_width - Mm(30)) / Mm(em_mm * 0.5)))
    lines = _flow_lines(block) if block.type != "list" else list(block.items)
    wrapped = sum(max(1, -(-len(line) // per_line)) for line in lines) or 1
    return int(Mm(em_mm * 1.25) * wrapped + Mm(2))


def _pptx_table(table: Any, rows: list[list[str]], block: Any, ts: TableStyle) -> None:
    from pptx.dml.color import RGBColor
    from pptx.util import Pt

    for r, row in enumerate(rows):
        for c in range(len(table.columns)):
            cell = table.cell(r, c)
            cell.text = row[c] if c < len(row) else ""
            header = r == 0 and bool(block.header)
            fill = ts.header_background if header else None
            if not header and ts.stripe_background and (r - bool(block.header)) % 2:
                fill = ts.stripe_background
            if fill:
                cell.fill.solid()
                cell.fill.fore_color.rgb = RGBColor(*rgb(fill))
            elif not header:
                cell.fill.background()
            for run in cell.text_frame.paragraphs[0].runs:
                run.font.color.rgb = RGBColor(*rgb(ts.header_color if header else "#222222"))
                if ts.font_size:
                    run.font.size = Pt(ts.font_size)
