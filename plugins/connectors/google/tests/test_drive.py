"""Drive specifics over the fake at the wire: shared-drive items (every call carries
``supportsAllDrives`` / ``includeItemsFromAllDrives``, the fake leaves the items out
otherwise), a subfolder's files with their paths, the start page token taken before the
sweep, changes in a subfolder, Google Docs exported to text."""

from __future__ import annotations

from typing import Any

import httpx

from nyla.sdk.connectors import sync_pages
from nyla_connector_google.items import FOLDER_MIME

from .drive_wire import FOLDER, SHARED, DriveWire
from .google_wire import GoogleCorpus, one

SCOPE = f"/drives/{SHARED}/{FOLDER}"


def library() -> GoogleCorpus:
    corpus = GoogleCorpus("file:", "1A2b3C4d5E6f", page_size=10)
    for i in range(4):
        corpus.add(f"report-{i}.txt", f"Quarterly report {i}.", SCOPE)
    return corpus


async def run(session: Any, checkpoint: Any) -> tuple[list[Any], Any]:
    pages = [p async for p in sync_pages(session.adapter, session, SCOPE, checkpoint)]
    return pages, pages[-1].checkpoint


async def test_shared_drive_items_are_asked_for_on_every_call(google):
    corpus = library()
    async with google(DriveWire(), corpus) as (session, vendor):
        listed = await session.adapter.browse(session, SCOPE)
        found = await session.adapter.search(session, "report 2", SCOPE)
        got = await session.adapter.download(session, listed.items[0].id)
        _, checkpoint = await run(session, None)
        corpus.add("late.txt", "late", SCOPE)
        pages, _ = await run(session, checkpoint)
    assert {i.title for i in listed.items} == {f"report-{i}.txt" for i in range(4)}
    assert [i.title for i in found.items] == ["report-2.txt"]
    assert got.content == b"Quarterly report 0."
    assert [i.title for p in pages for i in p.items] == ["late.txt"]
    for request in vendor.data_requests:
        assert one(request, "supportsAllDrives") == "true", request.url
        if request.url.path.endswith(("/files", "/changes")):
            assert one(request, "includeItemsFromAllDrives") == "true", request.url
            assert one(request, "driveId") == SHARED, request.url
    searched = next(r for r in vendor.data_requests if "fullText" in (one(r, "q") or ""))
    assert one(searched, "q") == (
        f"fullText contains 'report 2' and trashed = false and '{FOLDER}' in parents"
    )
    assert one(searched, "corpora") == "drive"


async def test_subfolders_are_swept_and_their_changes_followed(google):
    corpus = library()
    sub = corpus.add("Minutes", b"", SCOPE, mime=FOLDER_MIME)
    sub_id = corpus.raw(sub.id)
    corpus.add("minutes-1.txt", "Board minutes.", f"{SCOPE}/Minutes", extra={"parent": sub_id})
    async with google(DriveWire(), corpus) as (session, _):
        pages, checkpoint = await run(session, None)
        paths = {i.path for p in pages for i in p.items}
        assert f"{SCOPE}/Minutes/minutes-1.txt" in paths and f"{SCOPE}/report-0.txt" in paths
        assert not any(i.kind == "folder" for p in pages for i in p.items)
        assert checkpoint["folders"] == {FOLDER: SCOPE, sub_id: f"{SCOPE}/Minutes"}
        added = corpus.add("minutes-2.txt", "More.", f"{SCOPE}/Minutes", extra={"parent": sub_id})
        elsewhere = corpus.add("other.txt", "Not ours.", "/elsewhere", extra={"parent": "1Other"})
        pages, _ = await run(session, checkpoint)
    assert [(i.id, i.path) for p in pages for i in p.items] == [
        (added.id, f"{SCOPE}/Minutes/minutes-2.txt")
    ]
    assert elsewhere.id in {t for p in pages for t in p.tombstones}, "out of scope: not indexed"


async def test_start_page_token_is_taken_before_the_sweep(google):
    corpus = library()
    arrived: list[str] = []

    def wrap(vendor: Any) -> Any:
        def handler(request: httpx.Request) -> httpx.Response:
            if request.url.path.endswith("/files") and not arrived:
                arrived.append(corpus.add("during.txt", "written mid-sweep", SCOPE).id)
            return vendor(request)

        return handler

    async with google(DriveWire(), corpus, wrap) as (session, vendor):
        _, checkpoint = await run(session, None)
        kinds = [r.url.path.rsplit("/", 1)[-1] for r in vendor.data_requests]
        assert kinds.index("startPageToken") < kinds.index("files")
        pages, _ = await run(session, checkpoint)
    assert arrived[0] in {i.id for p in pages for i in p.items}


async def test_google_docs_are_exported_to_text(google):
    corpus = library()
    doc = corpus.add(
        "Budget memo",
        "The budget grows by 4 %.",
        SCOPE,
        mime="application/vnd.google-apps.document",
    )
    async with google(DriveWire(), corpus) as (session, vendor):
        got = await session.adapter.download(session, doc.id)
    export = vendor.data_requests[-1]
    assert export.url.path.endswith(f"/files/{corpus.raw(doc.id)}/export")
    assert one(export, "mimeType") == "text/plain"
    assert got.content == b"The budget grows by 4 %." and got.item.title == "Budget memo.txt"
    assert got.mime == "text/plain"


async def test_shared_drives_and_who_is_signed_in(google):
    async with google(DriveWire(), library()) as (session, vendor):
        drives = await session.adapter.browse(session, "/drives")
        root = await session.adapter.browse(session, "/")
        who = await session.adapter.check(session)
    assert [(i.title, i.path, i.kind) for i in drives.items] == [
        ("Finance", f"/drives/{SHARED}", "folder")
    ]
    assert [i.path for i in root.items] == ["/mail", "/drive", "/drives", "/calendar", "/contacts"]
    assert who == "signed in as Megan Bowen <megan@example.com>"
    assert [r.url.path for r in vendor.data_requests] == ["/drive/v3/drives", "/drive/v3/about"]
