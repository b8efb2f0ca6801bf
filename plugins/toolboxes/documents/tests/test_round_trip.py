"""Round trips: a document rendered to each format and extracted again yields the same
headings, tables and text; every PDF produced is rendered by pdftoppm without error."""

from __future__ import annotations

import io
import shutil
import subprocess

import PIL.Image
import pytest

from nyla_toolbox_documents.extract import extract
from nyla_toolbox_documents.extract_text import parse_markdown
from nyla_toolbox_documents.render import renderer
from nyla_toolbox_documents.render_images import Image
from nyla_toolbox_documents.style import Style

from . import makers

SOURCE = """# Annual report

The year brought steady growth across all regions and products.

## Sales by region

| Region | Q1 | Q2 |
|---|---|---|
| North | 120 | 130 |
| South | 95 | 101 |

- Hire two engineers
- Open the Basel office

## Outlook

Next year we expect more of the same.

![Logo](file:logo)

### Risks

| Risk | Owner |
|---|---|
| Supply | Ada |
"""

IMAGES = {"file:logo": Image("image/png", makers.png(120, 60))}


def _words(blocks) -> set[str]:
    from nyla_toolbox_documents.udm_ops import to_markdown

    text = to_markdown([b for b in blocks if b.type in ("text", "list", "heading")])
    return {w.strip("-•.|#") for w in text.split()} - {""}


def _tables(udm):
    return [(b.header, b.rows) for b in udm.blocks() if b.type == "table"]


def _headings(udm):
    return [b.text for b in udm.blocks() if b.type == "heading"]


@pytest.fixture(scope="module")
def source():
    return parse_markdown(SOURCE)


@pytest.mark.parametrize("fmt", ["pdf", "docx", "pptx", "html"])
def test_headings_tables_and_text_survive(fmt, source):
    content = renderer(fmt)(source, Style(), IMAGES)
    back = extract(f"report.{fmt}", content).udm
    assert _headings(back) == _headings(source)
    assert _tables(back) == _tables(source)
    assert _words(source.blocks()) <= _words(back.blocks())


def test_a_long_section_continues_on_untitled_slides():
    long = parse_markdown(
        "# Only heading\n\n" + "\n\n".join(f"Paragraph {n}. " * 12 for n in range(30))
    )
    back = extract("long.pptx", renderer("pptx")(long, Style(), {})).udm
    assert len(back.children) > 3
    assert _headings(back) == ["Only heading"]
    assert [b.text for b in back.blocks() if b.type == "text"] == [
        b.text for b in long.blocks() if b.type == "text"
    ]


def test_pdf_paragraphs_come_back_one_by_one():
    two = parse_markdown(
        "# T\n\n" + "First paragraph, long enough to wrap. " * 6 + "\n\nSecond one."
    )
    back = extract("p.pdf", renderer("pdf")(two, Style(), {})).udm
    texts = [b.text for b in back.blocks() if b.type == "text"]
    assert texts == [b.text for b in two.blocks() if b.type == "text"]


def test_xlsx_keeps_tables_on_named_sheets_and_the_text_flow(source):
    back = extract("report.xlsx", renderer("xlsx")(source, Style(), IMAGES)).udm
    parts = [p.label for p in back.children]
    assert parts == ["Document", "Sales by region", "Risks"]
    tables = _tables(back)[1:]  # the Document sheet reads as a one-column table
    assert tables == _tables(source)
    flow = back.children[0].children[0]
    assert [flow.header[0], *(r[0] for r in flow.rows)][:2] == [
        "Annual report",
        SOURCE.split("\n")[2],
    ]


def test_images_are_embedded(source):
    for fmt in ("pdf", "docx", "pptx"):
        back = extract(f"r.{fmt}", renderer(fmt)(source, Style(), IMAGES))
        assert [b.type for b in back.udm.blocks()].count("image") == 1, fmt
        (item,) = back.items.values()
        assert PIL.Image.open(io.BytesIO(item.content)).size == (120, 60), fmt
    assert b"data:image/png;base64," in renderer("html")(source, Style(), IMAGES)


def test_style_reaches_the_files(source):
    style = Style.model_validate(
        {
            "fontFamily": "Times",
            "headingColor": "#AA0000",
            "pageSize": "Letter",
            "orientation": "landscape",
            "tables": {"2": {"headerBackground": "#00AA00", "headerColor": "#000000"}},
        }
    )
    html = renderer("html")(source, style, IMAGES).decode()
    assert "color:#AA0000" in html and html.count("background:#00AA00") == 2
    from pypdf import PdfReader

    page = PdfReader(io.BytesIO(renderer("pdf")(source, style, IMAGES))).pages[0]
    assert (round(float(page.mediabox.width)), round(float(page.mediabox.height))) == (792, 612)
    from docx import Document

    doc = Document(io.BytesIO(renderer("docx")(source, style, IMAGES)))
    assert str(doc.styles["Heading 1"].font.color.rgb) == "AA0000"
    assert doc.styles["Normal"].font.name == "Times"


def test_bad_style_is_refused():
    with pytest.raises(ValueError, match="should match pattern"):
        Style.model_validate({"headingColor": "red"})
    with pytest.raises(ValueError, match="Extra inputs"):
        Style.model_validate({"fontColour": "#000000"})


@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="poppler-utils not installed")
@pytest.mark.parametrize(
    "style",
    [
        {},
        {"pageSize": "Letter", "orientation": "landscape", "fontFamily": "Times"},
        {"pageSize": "A5", "marginMm": 5, "fontSize": 7, "table": {"stripeBackground": None}},
    ],
)
def test_pdftoppm_renders_every_pdf(style, source, tmp_path):
    long = source.model_copy(deep=True)
    long.children.extend(long.children * 8)  # several pages, tables across page breaks
    pdf = tmp_path / "r.pdf"
    pdf.write_bytes(renderer("pdf")(long, Style.model_validate(style), IMAGES))
    done = subprocess.run(
        ["pdftoppm", "-png", "-r", "30", str(pdf), str(tmp_path / "page")],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert len(list(tmp_path.glob("page*.png"))) >= 2
