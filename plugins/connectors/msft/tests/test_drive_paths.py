"""Drive paths from ids (issue 28, fault 1). Graph's delta answers carry no
``parentReference.path`` (driveitem-delta, Remarks: "track items by id"), so the fake here
never sends one: every path has to come from parent ids, through renames and moves, with
parents met after their children and parents never met at all."""

from __future__ import annotations

from typing import Any

import httpx

from .graph_wire import DRIVE, GRAPH, SITE

DELTA = f"/drives/{DRIVE}/root/delta"
SCOPE = f"/sites/{SITE}/{DRIVE}/Reports"


def folder(item_id: str, name: str, parent: str, **extra: Any) -> dict[str, Any]:
    """A folder as delta answers it: id, name, the parent's id and drive, no path."""
    return {
        "id": item_id,
        "name": name,
        "folder": {"childCount": 1},
        "parentReference": {"driveId": DRIVE, "driveType": "documentLibrary", "id": parent},
        "cTag": f'"c:{{{item_id}}},1"',
        **extra,
    }


def file(item_id: str, name: str, parent: str, tag: int = 1) -> dict[str, Any]:
    return {
        "id": item_id,
        "name": name,
        "size": 12,
        "file": {"mimeType": "text/plain"},
        "lastModifiedDateTime": "2026-11-30T10:00:00Z",
        "parentReference": {"driveId": DRIVE, "driveType": "documentLibrary", "id": parent},
        "cTag": f'"c:{{{item_id}}},{tag}"',
    }


ROOT = {"id": "R", "name": "root", "root": {}, "folder": {"childCount": 2}}


def serve_delta(graph, pages: dict[str | None, dict[str, Any]]) -> None:
    """Delta pages by their ``token`` parameter (the first page has none)."""
    graph.routes[("GET", DELTA)] = lambda r: httpx.Response(
        200, json=pages[r.url.params.get("token")]
    )


def first_listing(graph) -> None:
    # children before their folders, and 'Deep' never listed: it must be fetched by id
    serve_delta(
        graph,
        {
            None: {
                "value": [
                    ROOT,
                    file("F1", "notes.txt", "A"),
                    file("F2", "notes.txt", "B"),
                    folder("A", "A", "REP"),
                    folder("B", "B", "REP"),
                    folder("REP", "Reports", "R"),
                    file("F3", "outside.txt", "R"),
                ],
                "@odata.nextLink": f"{GRAPH}{DELTA}?token=p2",
            },
            "p2": {
                "value": [file("F4", "deep.txt", "DEEP")],
                "@odata.deltaLink": f"{GRAPH}{DELTA}?token=d1",
            },
        },
    )
    graph.routes[("GET", f"/drives/{DRIVE}/items/DEEP")] = httpx.Response(
        200, json=folder("DEEP", "Deep", "B")
    )


async def test_a_sub_folder_indexes_exactly_its_files_with_their_real_paths(open_session, graph):
    first_listing(graph)
    async with open_session() as s:
        pages = [p async for p in s.adapter.sync(s, SCOPE, None)]
        ids = [i async for chunk in s.adapter.list_ids(s, SCOPE) for i in chunk]
    files = {i.path for p in pages for i in p.items if i.kind == "file"}
    assert files == {
        f"{SCOPE}/A/notes.txt",
        f"{SCOPE}/B/notes.txt",
        f"{SCOPE}/B/Deep/deep.txt",
    }
    assert not any(p.tombstones for p in pages)
    assert sorted(ids) == sorted(f"file:{DRIVE}:{x}" for x in ("A", "B", "F1", "F2", "F4"))
    assert all(p.full_listing for p in pages) and pages[-1].done


async def test_a_renamed_folder_moves_every_path_below_it_and_a_file_moved_out_is_gone(
    open_session, graph
):
    first_listing(graph)
    async with open_session() as s:
        pages = [p async for p in s.adapter.sync(s, SCOPE, None)]
        checkpoint = pages[-1].checkpoint
        # the next delta names only the renamed folder (never its children) and a file that
        # moved from A to the drive's root
        serve_delta(
            graph,
            {
                "d1": {
                    "value": [folder("B", "B-renamed", "REP"), file("F1", "notes.txt", "R", 2)],
                    "@odata.deltaLink": f"{GRAPH}{DELTA}?token=d2",
                }
            },
        )
        graph.routes[("GET", f"/drives/{DRIVE}/items/B/children")] = httpx.Response(
            200, json={"value": [file("F2", "notes.txt", "B"), folder("DEEP", "Deep", "B")]}
        )
        graph.routes[("GET", f"/drives/{DRIVE}/items/DEEP/children")] = httpx.Response(
            200, json={"value": [file("F4", "deep.txt", "DEEP")]}
        )
        again = [p async for p in s.adapter.sync(s, SCOPE, checkpoint)]
    paths = {i.path for p in again for i in p.items if i.kind == "file"}
    assert paths == {f"{SCOPE}/B-renamed/notes.txt", f"{SCOPE}/B-renamed/Deep/deep.txt"}
    assert again[-1].tombstones == [f"file:{DRIVE}:F1"]
    assert not again[-1].full_listing


async def test_a_onenote_notebook_is_skipped_with_a_reason_once(open_session, graph):
    notebook = folder("NB", "Team Notebook", "REP", package={"type": "oneNote"})
    notebook.pop("folder")
    serve_delta(
        graph,
        {
            None: {
                "value": [
                    ROOT,
                    folder("REP", "Reports", "R"),
                    notebook,
                    file("S1", "Meetings.one", "NB"),
                    file("OK", "plan.txt", "REP"),
                ],
                "@odata.deltaLink": f"{GRAPH}{DELTA}?token=d1",
            },
            "d1": {
                "value": [notebook, file("S1", "Meetings.one", "NB", 2)],
                "@odata.deltaLink": f"{GRAPH}{DELTA}?token=d2",
            },
        },
    )
    async with open_session() as s:
        first = [p async for p in s.adapter.sync(s, SCOPE, None)]
        later = [p async for p in s.adapter.sync(s, SCOPE, first[-1].checkpoint)]
    assert [i.title for p in first for i in p.items] == ["plan.txt"]
    [failure] = [f for p in first for f in p.failures]
    assert failure.item_id == f"file:{DRIVE}:NB" and "OneNote" in failure.reason
    assert [f for p in later for f in p.failures] == []
    assert [i for p in later for i in p.items] == []


async def test_a_checkpoint_without_a_tree_starts_over_in_full(open_session, graph):
    first_listing(graph)
    old = {"link": f"{GRAPH}{DELTA}?token=d1", "full": False, "drive": DRIVE, "scope": SCOPE}
    async with open_session() as s:
        pages = [p async for p in s.adapter.sync(s, SCOPE, old)]
    assert pages[0].full_listing
    assert len({i.path for p in pages for i in p.items if i.kind == "file"}) == 3


async def test_deletions_come_from_the_feed_unless_a_folder_went(open_session, graph):
    """A deleted file is in the delta: the walker needs no id listing. A deleted folder is
    named alone (its files may not each come): then the walker lists ids to find them."""
    first_listing(graph)
    gone_file = {"id": "F1", "deleted": {"state": "deleted"}, "parentReference": {"driveId": DRIVE}}
    gone_folder = {
        "id": "B",
        "deleted": {"state": "deleted"},
        "parentReference": {"driveId": DRIVE},
    }
    async with open_session() as s:
        checkpoint = [p async for p in s.adapter.sync(s, SCOPE, None)][-1].checkpoint
        serve_delta(
            graph, {"d1": {"value": [gone_file], "@odata.deltaLink": f"{GRAPH}{DELTA}?token=d2"}}
        )
        [file_page] = [p async for p in s.adapter.sync(s, SCOPE, checkpoint)]
        serve_delta(
            graph, {"d1": {"value": [gone_folder], "@odata.deltaLink": f"{GRAPH}{DELTA}?token=d2"}}
        )
        [folder_page] = [p async for p in s.adapter.sync(s, SCOPE, checkpoint)]
    assert file_page.tombstones == [f"file:{DRIVE}:F1"] and file_page.deletions_reported
    assert folder_page.tombstones == [f"file:{DRIVE}:B"] and not folder_page.deletions_reported
