"""The three SharePoint tools over the Microsoft 365 connector and a fake SharePoint at the
wire, called as an agent run calls them."""

from __future__ import annotations

import functools

from nyla.sdk import RunContext
from nyla.testing import call_tool

from .conftest import USER
from .fake_sharepoint import DATA, DRIVE, SITE

BUDGET = DATA["items"][0]
LIBRARY = f"/sites/{SITE}/{DRIVE}"


call = functools.partial(call_tool, user=USER)


async def test_find_sites_with_their_libraries(kernel, connection, graph):
    result = await call(kernel, "findSharePointSites", {"query": "fin"})
    assert result.success, result.error
    assert "Finance" in result.content and "Marketing" not in result.content
    assert f"path {LIBRARY}" in result.content, "the library's path to search in"
    assert graph.requests[0].url.params["search"] == "fin"
    everything = await call(kernel, "findSharePointSites", {"includeLibraries": False})
    assert [s["site"]["title"] for s in everything.data["sites"]] == ["Finance", "Marketing"]


async def test_search_in_a_library_folder_shows_metadata_inline(kernel, connection, graph):
    result = await call(
        kernel, "searchSharePoint", {"query": "budget", "path": f"{LIBRARY}/Reports"}
    )
    assert result.success, result.error
    line = result.content.splitlines()[0]
    assert line.startswith("📄 Budget 2026.csv")
    assert f"path {LIBRARY}/Reports/Budget 2026.csv" in line
    assert "modified 2026-01-05T09:30+00:00" in line and "by Adele Vance" in line
    assert f"[id: file:{DRIVE}:{BUDGET['id']}]" in line
    assert graph.requests[0].url.path.endswith("/root:/Reports:/search(q='budget')")
    nothing = await call(
        kernel, "searchSharePoint", {"query": "travel", "path": f"{LIBRARY}/Reports"}
    )
    assert nothing.content == "no items"


async def test_search_everywhere_and_bad_paths(kernel, connection, graph):
    result = await call(kernel, "searchSharePoint", {"query": "travel"})
    assert "Travel policy.pdf" in result.content
    assert graph.requests[0].url.path.endswith("/search/query")
    bad = await call(kernel, "searchSharePoint", {"query": "x", "path": "/mail/inbox"})
    assert not bad.success and bad.error_details.field == "path"


async def test_read_into_files_with_the_data_sources_policy(kernel, connection, graph):
    await kernel.knowledge.governance.add_data_source(
        "ds-fin", connection.id, LIBRARY, user_id=USER, neutralize=True
    )
    result = await call(kernel, "readSharePointFile", {"itemId": f"file:{DRIVE}:{BUDGET['id']}"})
    assert result.success, result.error
    assert "profit,340000" in result.content, "text documents come back inline"
    run = RunContext(user_id=USER)
    saved = await kernel.files.get(result.data["fileId"], run)
    assert saved.name == "Budget 2026.csv" and saved.neutralize and saved.data_source_id == "ds-fin"
    assert await kernel.files.read_bytes(saved.id, run) == BUDGET["content"].encode()
    pdf = await call(
        kernel, "readSharePointFile", {"itemId": f"file:{DRIVE}:{DATA['items'][1]['id']}"}
    )
    assert pdf.success and "readFile" in pdf.content


async def test_errors_are_results(kernel, connection, graph):
    missing = await call(kernel, "readSharePointFile", {"itemId": f"file:{DRIVE}:nope"})
    assert not missing.success and missing.error_details.code == "NOT_FOUND"
    not_a_file = await call(kernel, "readSharePointFile", {"itemId": "mail:AAMk"})
    assert not not_a_file.success and not_a_file.error_details.field == "itemId"
    stranger = await call(kernel, "findSharePointSites", {}, user="mallory")
    assert stranger.error_details.code == "NOT_AVAILABLE"
