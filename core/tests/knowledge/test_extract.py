"""Each extractor on the real sample files in tests/data (no model call)."""

from __future__ import annotations

import pytest

from nyla.knowledge.extract import ExtractionError, detect_kind, extract

from .conftest import DATA


def _doc(name: str):
    return extract(name, (DATA / name).read_bytes())


def test_text():
    doc = _doc("sample.txt")
    assert doc.kind == "text" and doc.structure["paragraphs"] == 4
    assert "Mehrwertsteuer" in doc.objects[0].text


def test_markdown_sections_tables_and_code_fence():
    doc = _doc("sample.md")
    titles = [s["title"] for s in doc.structure["sections"]]
    assert titles == ["Onboarding Guide", "Accounting", "VAT", "Payroll", "Holidays"]
    vat = next(o for o in doc.objects if o.context_ref.endswith("VAT"))
    assert vat.context_ref == "section Onboarding Guide > Accounting > VAT"
    assert "quarterly" in vat.text
    table = next(o for o in doc.objects if o.content_type == "table")
    assert "January" in table.text and "---" not in table.text
    assert doc.structure["tables"][0]["rows"] == 2
    # the '#' inside the code fence is not a heading
    assert "not a heading" not in titles


def test_html_drops_script_and_style_keeps_table():
    doc = _doc("sample.html")
    text = "\n".join(o.text for o in doc.objects)
    assert doc.structure["title"] == "Client portal help"
    assert "do not index" not in text and "color: red" not in text
    table = next(o for o in doc.objects if o.content_type == "table")
    assert "R-1002 | 860.50 | 2025-04-15" in table.text
    assert [s["title"] for s in doc.structure["sections"]] == [
        "Client portal",
        "Invoices",
        "Support",
    ]


def test_pdf_pages():
    doc = _doc("sample.pdf")
    assert [o.context_ref for o in doc.objects] == ["page 1", "page 2"]
    assert "twelve percent" in doc.objects[0].text
    assert "accountants" in doc.objects[1].text
    assert len(doc.structure["pages"]) == 2


def test_docx_headings_and_table():
    doc = _doc("sample.docx")
    assert doc.structure["title"] == "Mandate agreement"
    assert [s["level"] for s in doc.structure["sections"]] == [1, 2, 2]
    table = next(o for o in doc.objects if o.content_type == "table")
    assert "Payroll | 3600" in table.text
    assert table.context_ref == "section Mandate agreement > Fees / table 1"


def test_csv_rows_with_header():
    doc = _doc("sample.csv")
    assert doc.structure["rows"] == 4 and doc.structure["columns"][1] == "name"
    assert doc.objects[0].text.splitlines()[0].startswith("client_id | name")
    assert "Bäckerei Huber" in doc.objects[0].text


def test_json_flattened_per_top_level_key():
    doc = _doc("sample.json")
    assert doc.structure["keys"] == ["company", "services", "contacts"]
    contacts = next(o for o in doc.objects if o.context_ref == "key contacts")
    assert "contacts[1].name: Ben Beispiel" in contacts.text


@pytest.mark.parametrize(
    ("name", "reason"),
    [("encrypted.pdf", "password"), ("broken.pdf", "PDF")],
)
def test_unreadable_files_raise_with_reason(name, reason):
    with pytest.raises(ExtractionError, match=reason):
        _doc(name)


def test_unsupported_and_invalid():
    with pytest.raises(ExtractionError, match="unsupported"):
        extract("image.png", b"\x89PNG")
    with pytest.raises(ExtractionError, match="invalid JSON"):
        extract("x.json", b"{nope")
    with pytest.raises(ExtractionError, match="DOCX"):
        extract("x.docx", b"not a zip")
    assert detect_kind("x.bin", "text/markdown; charset=utf-8") == "markdown"


def test_nul_characters_are_dropped():
    doc = extract("x.txt", b"before\x00after")
    assert doc.objects[0].text == "beforeafter"
