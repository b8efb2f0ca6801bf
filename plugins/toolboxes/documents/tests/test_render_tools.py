"""renderDocument and createChart called as an agent run calls them: files saved for the
user, images read from the user's files only, bad input refused with the reason."""

from __future__ import annotations

from nyla.sdk import RunContext
from nyla.testing import call_tool

from . import makers
from .conftest import USER


async def test_render_udm_to_html_and_xlsx_with_an_image_of_the_user(kernel, store):
    logo = await store("logo.png", makers.png(40, 20))
    udm = {
        "title": "Price list",
        "children": [
            {"type": "heading", "level": 1, "text": "Prices"},
            {"type": "table", "header": ["Plan", "CHF"], "rows": [["Basic", "10"]]},
            {"type": "image", "alt": "logo", "src": f"file:{logo}"},
        ],
    }
    got = await call_tool(
        kernel, "renderDocument", {"udm": udm, "formats": ["html", "xlsx"], "name": "prices.html"},
        user=USER,
    )  # fmt: skip
    assert got.success, got.error
    files = got.data["files"]
    assert [f["name"] for f in files] == ["prices.html", "prices.xlsx"]
    html = await kernel.files.read_bytes(files[0]["fileId"], RunContext(user_id=USER))
    assert b"<h1>Prices</h1>" in html and b"data:image/png;base64," in html


async def test_render_refuses_what_it_cannot_use(kernel, store):
    theirs = await kernel.files.save("x.png", makers.png(), RunContext(user_id="eve"))
    foreign = await call_tool(
        kernel, "renderDocument",
        {"markdown": f"![x](file:{theirs.id})", "formats": ["pdf"]}, user=USER,
    )  # fmt: skip
    assert not foreign.success
    text_file = await store("note.txt", b"hello")
    not_image = await call_tool(
        kernel, "renderDocument", {"markdown": f"![x](file:{text_file})", "formats": ["pdf"]},
        user=USER,
    )  # fmt: skip
    assert not not_image.success and "not a PNG or JPEG" in not_image.error
    both = await call_tool(
        kernel, "renderDocument", {"markdown": "# a", "udm": {}, "formats": ["pdf"]}, user=USER
    )
    assert not both.success and "one of markdown, udm or fileId" in both.error
    fmt = await call_tool(
        kernel, "renderDocument", {"markdown": "# a", "formats": ["odt"]}, user=USER
    )
    assert not fmt.success


async def test_create_chart_saves_png_and_svg(kernel):
    args = {"kind": "line", "labels": ["a", "b"], "series": [{"values": [1, 2]}], "width": 300,
            "height": 200, "name": "trend"}  # fmt: skip
    got = await call_tool(kernel, "createChart", args, user=USER)
    assert got.success, got.error
    assert [f["name"] for f in got.data["files"]] == ["trend.png", "trend.svg"]
    assert [f["mimeType"] for f in got.data["files"]] == ["image/png", "image/svg+xml"]


async def test_a_stored_docx_converts_to_pdf_with_its_image(kernel, store):
    from nyla_toolbox_documents.extract import extract

    docx = await store("report.docx", makers.docx_file())
    got = await call_tool(
        kernel, "renderDocument", {"fileId": docx, "formats": ["pdf"], "name": "report"}, user=USER
    )
    assert got.success, got.error
    pdf = await kernel.files.read_bytes(got.data["files"][0]["fileId"], RunContext(user_id=USER))
    back = extract("report.pdf", pdf).udm
    assert [b.text for b in back.blocks() if b.type == "heading"] == [
        "Quarterly report",
        "Figures",
    ]
    assert [b.rows for b in back.blocks() if b.type == "table"] == [
        [["North", "120"], ["South", "95"]]
    ]
    assert [b.type for b in back.blocks()].count("image") == 1
