"""Structure extraction of every supported kind, on files made here with each format's
library."""

from __future__ import annotations

import pytest

from nyla_toolbox_documents import udm_ops
from nyla_toolbox_documents.extract import DocumentError, extract

from . import makers


def _types(extracted):
    return [b.type for b in extracted.udm.blocks()]


def test_markdown_headings_table_list_code():
    got = extract("plan.md", makers.MARKDOWN.encode())
    blocks = got.udm.blocks()
    assert got.udm.title == "Project plan"
    assert _types(got) == ["heading", "text", "heading", "table", "list", "code"]
    assert blocks[1].text == "Intro paragraph with bold text."
    assert blocks[3].header == ["Item", "Cost"]
    assert blocks[3].rows == [["Laptops", "3000"], ["Travel", "800"]]
    assert blocks[5].language == "python" and blocks[5].text == 'print("hi")'
    tables = udm_ops.structure(got.udm)["tables"]
    assert tables == [
        {"ref": "table 1", "caption": "", "columns": 2, "rows": 2,
         "section": "Project plan > Budget", "part": ""}
    ]  # fmt: skip


def test_html_drops_scripts_and_keeps_structure():
    got = extract("page.html", makers.HTML)
    assert got.udm.title == "Page"
    assert _types(got) == ["heading", "text", "heading", "table", "list", "image"]
    assert "alert" not in udm_ops.to_markdown(got.udm.blocks())
    assert got.udm.blocks()[3].header == ["Plan", "CHF"]


def test_docx_headings_table_list_and_image_item():
    got = extract("report.docx", makers.docx_file())
    assert _types(got) == ["heading", "text", "heading", "table", "list", "image"]
    image = got.udm.blocks()[-1]
    assert got.items[image.src].content.startswith(b"\x89PNG")
    assert got.udm.blocks()[3].rows == [["North", "120"], ["South", "95"]]


def test_xlsx_sheets_as_parts_with_tables():
    got = extract("book.xlsx", makers.xlsx_file())
    structure = udm_ops.structure(got.udm)
    assert [p["ref"] for p in structure["parts"]] == ["sheet Sales", "sheet Staff"]
    sales = udm_ops.select(got.udm, ["sheet Sales"])[0].block
    assert sales.header == ["Region", "Revenue"]
    assert sales.rows == [["North", "120"], ["South", "95.5"]]


def test_pptx_slides_titles_lists_tables_pictures():
    got = extract("deck.pptx", makers.pptx_file())
    structure = udm_ops.structure(got.udm)
    assert [p["ref"] for p in structure["parts"]] == ["slide 1", "slide 2"]
    assert [s["ref"] for s in structure["sections"]] == ["section Roadmap", "section Numbers"]
    slide1 = [w.block for w in udm_ops.select(got.udm, ["slide 1"])]
    assert slide1[1].items == ["Ship the beta", "Hire two engineers"]
    assert structure["tables"][0]["part"] == "slide 2"
    assert structure["embedded"][0]["extractable"] is True


def test_pdf_pages_outline_heading_and_text():
    got = extract("manual.pdf", makers.pdf_file())
    assert got.udm.title == "Manual"
    page1 = [w.block for w in udm_ops.select(got.udm, ["page 1"])]
    assert page1[0].type == "heading" and page1[0].text == "Introduction"
    assert "explains the device" in page1[1].text
    text = udm_ops.to_markdown([w.block for w in udm_ops.select(got.udm, ["page 2"])])
    assert "safety" in text


def test_eml_body_headers_and_attachments():
    got = extract("mail.eml", makers.eml_file())
    assert got.udm.title == "Contract draft"
    assert got.udm.meta["from"] == "ada@example.com"
    attachments = [b for b in got.udm.blocks() if b.type == "attachment"]
    assert [a.name for a in attachments] == ["draft.txt", "logo.png"]
    assert got.items[attachments[0].src].content == b"clause 1: be nice"
    assert "the draft is attached." in udm_ops.to_markdown(got.udm.blocks())


def test_zip_lists_entries_without_folders():
    got = extract("bundle.zip", makers.zip_file())
    names = [b.name for b in got.udm.blocks()]
    assert names == ["docs/readme.md", "data/table.csv"]
    assert got.items["item:attachment 2"].content == b"a,b\n1,2\n"


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("x.bin", b"\x00\x01", "unsupported file type"),
        ("broken.zip", b"PK not really", "corrupt ZIP"),
        ("broken.docx", b"not a zip", "cannot read docx"),
        ("broken.pdf", b"%PDF-1.4 garbage", "cannot read pdf"),
        ("note.eml", b"just text", "not an e-mail"),
    ],
)
def test_unreadable_files_say_why(name, content, reason):
    with pytest.raises(DocumentError, match=reason):
        extract(name, content)


def test_refs_select_sections_blocks_and_refuse_unknown():
    udm = extract("plan.md", makers.MARKDOWN.encode()).udm
    budget = udm_ops.select(udm, ["section Project plan > Budget"])
    assert [w.block.type for w in budget] == ["heading", "table", "list", "code"]
    assert [w.index for w in udm_ops.select(udm, ["blocks 2-3", "block 1"])] == [1, 2, 3]
    with pytest.raises(DocumentError, match="no 'table 9'"):
        udm_ops.select(udm, ["table 9"])


def test_a_zip_entry_with_a_forged_size_is_refused():
    import io
    import struct
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bomb.txt", "0" * 100_000)
    raw = bytearray(out.getvalue())
    central = raw.rindex(b"PK\x01\x02")
    struct.pack_into("<I", raw, central + 24, 10)  # uncompressed size: 10 bytes
    struct.pack_into("<I", raw, 22, 10)  # and in the local header
    with pytest.raises(DocumentError, match=r"bomb\.txt is damaged"):
        extract("bomb.zip", bytes(raw))


def test_big_declared_entries_are_listed_without_their_bytes(monkeypatch):
    from nyla_toolbox_documents import extract_mail

    monkeypatch.setattr(extract_mail, "MAX_ITEM_BYTES", 10)
    got = extract("bundle.zip", makers.zip_file())
    sizes = {b.name: (b.size, b.src) for b in got.udm.blocks()}
    assert sizes["docs/readme.md"] == (16, "")
    assert sizes["data/table.csv"] == (8, "item:attachment 2")


def test_a_long_pdf_is_read_up_to_the_page_cap(monkeypatch):
    from nyla_toolbox_documents import extract_pdf

    monkeypatch.setattr(extract_pdf, "MAX_PAGES", 1)
    got = extract("manual.pdf", makers.pdf_file())
    assert [p.label for p in got.udm.children] == ["1"]
    assert got.udm.meta["cut"] == "2 pages, the first 1 read"


def test_a_structure_lists_at_most_max_listed_of_each(monkeypatch):
    monkeypatch.setattr(udm_ops, "MAX_LISTED", 2)
    markdown = "\n\n".join(f"# H{n}\n\n| a |\n|---|\n| {n} |" for n in range(5))
    structure = udm_ops.structure(extract("many.md", markdown.encode()).udm)
    assert [s["ref"] for s in structure["sections"]] == ["section H0", "section H1"]
    assert structure["notListed"] == {"sections": 3, "tables": 3}
    assert structure["counts"] == {"heading": 5, "table": 5}
