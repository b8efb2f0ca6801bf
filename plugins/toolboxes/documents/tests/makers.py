"""Real files made in the test run with each format's own library (no binary fixtures)."""

from __future__ import annotations

import io
import zipfile
from email.message import EmailMessage


def png(width: int = 8, height: int = 6) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def docx_file() -> bytes:
    from docx import Document
    from docx.shared import Inches

    doc = Document()
    doc.add_heading("Quarterly report", level=1)
    doc.add_paragraph("Revenue grew in every region.")
    doc.add_heading("Figures", level=2)
    table = doc.add_table(rows=3, cols=2)
    for r, row in enumerate([["Region", "Revenue"], ["North", "120"], ["South", "95"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    doc.add_paragraph("First point", style="List Bullet")
    doc.add_paragraph("Second point", style="List Bullet")
    doc.add_picture(io.BytesIO(png()), width=Inches(1))
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def xlsx_file() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Sales"
    for row in [["Region", "Revenue"], ["North", 120], ["South", 95.5]]:
        sheet.append(row)
    other = book.create_sheet("Staff")
    other.append(["Name", "Team"])
    other.append(["Ada", "R&D"])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def pptx_file() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Roadmap"
    body = slide.placeholders[1].text_frame
    body.text = "Ship the beta"
    body.add_paragraph().text = "Hire two engineers"
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Numbers"
    shape = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1))
    for r, row in enumerate([["Quarter", "Sales"], ["Q1", "10"]]):
        for c, value in enumerate(row):
            shape.table.cell(r, c).text = value
    second.shapes.add_picture(io.BytesIO(png()), Inches(6), Inches(2))
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def pdf_file() -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    c = canvas.Canvas(out, pagesize=A4)
    c.setTitle("Manual")
    c.drawString(72, 760, "Introduction")
    c.bookmarkPage("p1")
    c.addOutlineEntry("Introduction", "p1", level=0)
    c.drawString(72, 740, "This manual explains the device.")
    c.showPage()
    c.drawString(72, 760, "Second page text about safety.")
    c.showPage()
    c.save()
    return out.getvalue()


def eml_file() -> bytes:
    msg = EmailMessage()
    msg["From"] = "ada@example.com"
    msg["To"] = "bob@example.com"
    msg["Subject"] = "Contract draft"
    msg["Date"] = "Mon, 30 Nov 2026 10:00:00 +0000"
    msg.set_content("Hello Bob,\n\nthe draft is attached.\n\nAda")
    msg.add_attachment(b"clause 1: be nice", maintype="text", subtype="plain", filename="draft.txt")
    msg.add_attachment(png(), maintype="image", subtype="png", filename="logo.png")
    return msg.as_bytes()


def zip_file() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("docs/readme.md", "# Readme\n\nHello.")
        archive.writestr("data/table.csv", "a,b\n1,2\n")
        archive.writestr("empty/", "")
    return out.getvalue()


MARKDOWN = """# Project plan

Intro paragraph with **bold** text.

## Budget

| Item | Cost |
|------|------|
| Laptops | 3000 |
| Travel | 800 |

- plan
- build

```python
print("hi")
```
"""

HTML = b"""<html><head><title>Page</title><script>alert(1)</script></head><body>
<h1>Welcome</h1><p>Some <b>text</b> here.</p>
<div><h2>Prices</h2><table><tr><th>Plan</th><th>CHF</th></tr><tr><td>Basic</td><td>10</td></tr></table></div>
<ul><li>one</li><li>two</li></ul><img src="x.png" alt="diagram"></body></html>"""
