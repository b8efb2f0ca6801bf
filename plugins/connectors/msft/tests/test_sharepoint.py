"""OneDrive / SharePoint specifics over a scripted Graph: sites and libraries, Microsoft
Search, root/delta narrowed to a folder with a repeated item and a deleted one, and a
download that follows Graph's redirect to a pre-authenticated URL."""

from __future__ import annotations

import json

import httpx
import pytest

from nyla.sdk.connectors import ItemTooLargeError

from .graph_wire import DRIVE, GRAPH, SITE, sample


def drive_item(item_id: str, name: str, folder: str = "/Reports", **kw) -> dict:
    raw = sample("drive_item")
    raw.update(id=item_id, name=name, **kw)
    raw["parentReference"]["path"] = f"/drives/{DRIVE}/root:{folder}"
    return raw


async def test_sites_libraries_and_microsoft_search(open_session, graph):
    graph.routes[("GET", "/sites")] = httpx.Response(200, json={"value": [sample("site")]})
    graph.routes[("GET", f"/sites/{SITE}/drives")] = httpx.Response(
        200, json={"value": [sample("drive")]}
    )
    hits = sample("search_query_response")
    hits["value"][0]["hitsContainers"][0]["hits"][0]["resource"] = drive_item(
        "01BUDGET", "Budget 2026.xlsx"
    )
    graph.routes[("POST", "/search/query")] = httpx.Response(200, json=hits)
    async with open_session() as s:
        sites = await s.adapter.search(s, "finance", scope="/sites")
        libraries = await s.adapter.browse(s, sites.items[0].path)
        found = await s.adapter.search(s, "budget")
    assert graph.requests[0].url.params["search"] == "finance"
    assert sites.items[0].title == "Finance" and sites.items[0].path == f"/sites/{SITE}"
    assert libraries.items[0].path == f"/sites/{SITE}/{DRIVE}"
    assert libraries.items[0].extra["vendor"]["driveType"] == "documentLibrary"
    request = json.loads(graph.requests[2].content)["requests"][0]
    assert request["entityTypes"] == ["driveItem"] and request["query"] == {"queryString": "budget"}
    item = found.items[0]
    assert item.id == f"file:{DRIVE}:01BUDGET"
    assert item.path == f"/sites/{SITE}/{DRIVE}/Reports/Budget 2026.xlsx"
    assert item.author == "Adele Vance" and item.size == 35212
    assert found.cursor is None


async def test_delta_narrowed_to_the_folder_once_per_item(open_session, graph):
    delta = f"/drives/{DRIVE}/root/delta"

    def in_delta(raw: dict, parent: str) -> dict:
        # delta answers name the parent by id only (driveitem-delta, Remarks)
        raw["parentReference"].pop("path")
        raw["parentReference"]["id"] = parent
        return raw

    twice = in_delta(drive_item("01B", "b.docx"), "01REPORTS")
    pages = [
        {
            "value": [
                {"id": "01ROOT", "name": "root", "root": {}, "folder": {}},
                {
                    "id": "01REPORTS",
                    "name": "Reports",
                    "folder": {"childCount": 2},
                    "parentReference": {"driveId": DRIVE, "id": "01ROOT"},
                },
                {
                    "id": "01PRIVATE",
                    "name": "Private",
                    "folder": {"childCount": 1},
                    "parentReference": {"driveId": DRIVE, "id": "01ROOT"},
                },
                in_delta(drive_item("01A", "a.docx"), "01REPORTS"),
                twice,
                in_delta(drive_item("01X", "x.docx"), "01PRIVATE"),
            ],
            "@odata.nextLink": f"{GRAPH}{delta}?token=page2",
        },
        {
            "value": [
                twice,
                {
                    "id": "01GONE",
                    "deleted": {"state": "deleted"},
                    "parentReference": {"driveId": DRIVE},
                },
            ],
            "@odata.deltaLink": f"{GRAPH}{delta}?token=latest1",
        },
    ]
    graph.routes[("GET", delta)] = lambda r: httpx.Response(
        200, json=pages[1] if r.url.params.get("token") == "page2" else pages[0]
    )
    scope = f"/sites/{SITE}/{DRIVE}/Reports"
    async with open_session() as s:
        got = [p async for p in s.adapter.sync(s, scope, None)]
    assert [i.title for p in got for i in p.items] == ["a.docx", "b.docx"]
    assert got[-1].tombstones == [f"file:{DRIVE}:01GONE"]
    checkpoint = got[-1].checkpoint
    assert checkpoint["link"] == f"{GRAPH}{delta}?token=latest1"
    assert (checkpoint["full"], checkpoint["drive"], checkpoint["scope"]) == (False, DRIVE, scope)
    assert checkpoint["tree"]["root"] == "01ROOT"
    assert checkpoint["tree"]["folders"]["01REPORTS"] == {
        "parent": "01ROOT",
        "name": "Reports",
        "package": False,
    }
    assert all(p.full_listing for p in got)


#: where Graph's 302 sends a download: a short-lived URL on the library's own host
#: (driveitem-get-content: "a preauthenticated download URL")
DOWNLOAD_HOST = "https://contoso.sharepoint.com"


async def test_download_checks_size_then_follows_the_redirect(open_session, graph):
    item = f"/drives/{DRIVE}/items/01A"
    graph.routes[("GET", item)] = httpx.Response(200, json=drive_item("01A", "a.txt", size=11))
    graph.routes[("GET", f"{item}/content")] = httpx.Response(
        302,
        headers={"Location": f"{DOWNLOAD_HOST}/_layouts/15/download.aspx?UniqueId=01A&tempauth=x"},
    )
    graph.routes[("GET", "/_layouts/15/download.aspx")] = httpx.Response(
        200, content=b"hello world"
    )
    async with open_session() as s:
        with pytest.raises(ItemTooLargeError):
            await s.adapter.download(s, f"file:{DRIVE}:01A", max_bytes=5)
        assert len(graph.requests) == 1, "refused on the listed size before any byte"
        got = await s.adapter.download(s, f"file:{DRIVE}:01A", max_bytes=100)
    assert got.content == b"hello world" and got.item.title == "a.txt"
