"""browseContainer, readContentObjects, extractContainerItem and the UDM tools, called as an
agent run calls them, on files of the user stored in the test database."""

from __future__ import annotations

import json

from nyla.sdk import RunContext
from nyla.testing import call_tool

from . import makers
from .conftest import USER


async def test_browse_and_read_a_docx(kernel, store):
    file_id = await store("report.docx", makers.docx_file())
    browsed = await call_tool(kernel, "browseContainer", {"fileId": file_id}, user=USER)
    assert browsed.success, browsed.error
    assert browsed.data["counts"] == {"text": 1, "heading": 2, "list": 1, "table": 1, "image": 1}
    assert [s["ref"] for s in browsed.data["sections"]] == [
        "section Quarterly report",
        "section Quarterly report > Figures",
    ]
    read = await call_tool(
        kernel, "readContentObjects", {"fileId": file_id, "refs": ["table 1"]}, user=USER
    )
    assert read.content.splitlines() == [
        "| Region | Revenue |",
        "| --- | --- |",
        "| North | 120 |",
        "| South | 95 |",
    ]


async def test_extract_an_attachment_and_a_table_as_new_files(kernel, store):
    mail_id = await store("mail.eml", makers.eml_file())
    got = await call_tool(
        kernel, "extractContainerItem", {"fileId": mail_id, "ref": "attachment 1"}, user=USER
    )
    assert got.success, got.error
    saved = await kernel.files.read_bytes(got.data["fileId"], RunContext(user_id=USER))
    assert saved == b"clause 1: be nice"
    assert got.data["name"] == "draft.txt"
    book_id = await store("book.xlsx", makers.xlsx_file())
    table = await call_tool(
        kernel, "extractContainerItem", {"fileId": book_id, "ref": "table 2"}, user=USER
    )
    csv_bytes = await kernel.files.read_bytes(table.data["fileId"], RunContext(user_id=USER))
    assert csv_bytes.decode().splitlines() == ["Name,Team", "Ada,R&D"]


async def test_bad_refs_other_users_files_and_unsupported_files_fail_clearly(kernel, store):
    file_id = await store("plan.md", makers.MARKDOWN.encode())
    missing = await call_tool(
        kernel, "readContentObjects", {"fileId": file_id, "refs": ["slide 4"]}, user=USER
    )
    assert not missing.success and "browseContainer" in missing.error
    not_item = await call_tool(
        kernel, "extractContainerItem", {"fileId": file_id, "ref": "heading 1"}, user=USER
    )
    assert not not_item.success and "not one image, attachment or table" in not_item.error
    foreign = await call_tool(kernel, "browseContainer", {"fileId": file_id}, user="eve")
    assert not foreign.success
    blob = await store("blob.bin", b"\x00\x01\x02", "application/octet-stream")
    odd = await call_tool(kernel, "browseContainer", {"fileId": blob}, user=USER)
    assert not odd.success and "unsupported file type" in odd.error


UDM = {
    "kind": "markdown",
    "title": "Spec",
    "children": [
        {"type": "heading", "level": 1, "text": "Spec"},
        {"type": "text", "text": "Intro."},
        {"type": "heading", "level": 2, "text": "Data"},
        {"type": "table", "header": ["a", "b"], "rows": [["1", "2"]]},
        {"type": "part", "kind": "page", "label": "2", "children": [
            {"type": "image", "alt": "logo", "src": "file:abc"},
        ]},
    ],
}  # fmt: skip


async def test_udm_tools_over_json(kernel):
    structure = await call_tool(kernel, "getUdmStructure", {"udm": UDM}, user=USER)
    assert structure.data["tables"][0]["section"] == "Spec > Data"
    walked = await call_tool(kernel, "walkUdmBlocks", {"udm": UDM}, user=USER)
    assert [(w["index"], w["ref"], w["part"]) for w in walked.data][-1] == (5, "image 1", "page 2")
    tables = await call_tool(
        kernel, "filterUdmByType", {"udm": UDM, "types": ["table", "image"]}, user=USER
    )
    assert [w["block"]["type"] for w in tables.data] == ["table", "image"]
    wrong = await call_tool(kernel, "filterUdmByType", {"udm": UDM, "types": ["chart"]}, user=USER)
    assert not wrong.success and "unknown block types" in wrong.error
    bad = await call_tool(
        kernel, "getUdmStructure", {"udm": {"children": [{"type": "video"}]}}, user=USER
    )
    assert not bad.success and "not a UDM document" in bad.error
    assert json.loads(structure.content)["title"] == "Spec"


async def test_a_file_is_parsed_once_until_its_content_changes(kernel, store, monkeypatch):
    import importlib

    # the package's read_tools() function hides the module of the same name
    read_tools = importlib.import_module("nyla_toolbox_documents.read_tools")
    parsed: list[str] = []
    real = read_tools.extract

    def counting(name, content, mime_type=None):
        parsed.append(name)
        return real(name, content, mime_type)

    monkeypatch.setattr(read_tools, "extract", counting)
    file_id = await store("cached.md", b"# One\n\ntext")
    for _ in range(2):
        got = await call_tool(kernel, "browseContainer", {"fileId": file_id}, user=USER)
        assert got.data["sections"][0]["ref"] == "section One"
    assert parsed == ["cached.md"]
    await kernel.files.write(file_id, b"# Two\n\ntext", RunContext(user_id=USER))
    got = await call_tool(kernel, "browseContainer", {"fileId": file_id}, user=USER)
    assert got.data["sections"][0]["ref"] == "section Two"
    assert parsed == ["cached.md", "cached.md"]
    # the cache never answers for someone who may not read the file
    foreign = await call_tool(kernel, "browseContainer", {"fileId": file_id}, user="eve")
    assert not foreign.success
