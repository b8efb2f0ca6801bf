"""Google Drive v3 faked at the wire, from the documented file sample: files.list
(children, ``fullText contains``), files.get (metadata, ``alt=media``, export),
changes.getStartPageToken and changes.list (a stale page token gets 400 ``Invalid Value``).
Shared-drive items are left out of requests without ``supportsAllDrives`` /
``includeItemsFromAllDrives``, as Drive does.

Documented by (each method's page is its ``x-docs`` in ``data/spec/drive-v3.json``):
https://developers.google.com/drive/api/reference/rest/v3/files/list,
https://developers.google.com/drive/api/reference/rest/v3/files/get,
https://developers.google.com/drive/api/reference/rest/v3/files/export,
https://developers.google.com/drive/api/reference/rest/v3/changes/list,
https://developers.google.com/drive/api/guides/fields-parameter."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

import httpx

from nyla.testing.fake_vendor import FakeCorpus, FakeDoc
from nyla_connector_google import GoogleConnector

from .google_wire import GoogleCorpus, GoogleWire, google_error, google_spec, iso, one, sample

DRIVE = "/drive/v3"
SHARED = "0AFinanceSharedDrivePVA"
FOLDER = "1FolderReportsXyZ"
#: a subfolder of FOLDER (``sealed``) the walker contract can make unreadable
SUBFOLDER = "1FolderSealedAbC"
#: a shared drive as drives.list documents it
SHARED_DRIVE = {
    "kind": "drive#drive",
    "id": SHARED,
    "name": "Finance",
    "createdTime": "2025-03-01T08:00:00.000Z",
    "hidden": False,
}


def file_json(doc: FakeDoc, corpus: GoogleCorpus) -> dict[str, Any]:
    """The documented Drive file sample carrying ``doc`` (a file in the shared drive's
    Reports folder, unless the document says otherwise)."""
    raw = sample("drive_file")
    raw_id = corpus.raw(doc.id)
    raw.update(
        id=raw_id,
        name=doc.name,
        mimeType=doc.mime,
        parents=[doc.extra.get("parent", FOLDER)],
        modifiedTime=iso(doc),
        size=str(len(doc.content)),
        md5Checksum=doc.etag,
        version=str(doc.version),
        webViewLink=f"https://drive.google.com/file/d/{raw_id}/view?usp=drivesdk",
    )
    raw["lastModifyingUser"]["displayName"] = doc.author
    if doc.mime.startswith("application/vnd.google-apps."):
        for key in ("size", "md5Checksum"):
            raw.pop(key)  # Google's own formats have no bytes
    return raw


def shared_drive_flags(request: httpx.Request) -> bool:
    """Whether the request asks for shared-drive items as Drive requires."""
    return (
        one(request, "supportsAllDrives") == "true"
        and one(request, "includeItemsFromAllDrives") == "true"
        and one(request, "driveId") == SHARED
    )


def changes_json(corpus: GoogleCorpus, token: str) -> dict[str, Any]:
    """``changes.list`` from a start token (``N``) or a page token (``N~offset``)."""
    start, _, offset_text = token.partition("~")
    changed = corpus.changed_since(corpus.since(start))
    offset = int(offset_text or 0)
    changes = []
    for doc_id in changed[offset : offset + corpus.page_size]:
        raw_id = corpus.raw(doc_id)
        change: dict[str, Any] = {
            "kind": "drive#change",
            "changeType": "file",
            "time": "2026-01-05T10:00:00.000Z",
            "fileId": raw_id,
            "driveId": SHARED,
            "removed": doc_id not in corpus.docs,
        }
        if doc_id in corpus.docs:
            change["file"] = file_json(corpus.docs[doc_id], corpus)
        changes.append(change)
    body: dict[str, Any] = {"kind": "drive#changeList", "changes": changes}
    if offset + corpus.page_size < len(changed):
        body["nextPageToken"] = f"{start}~{offset + corpus.page_size}"
    else:
        body["newStartPageToken"] = str(corpus.stamp())
    return body


class DriveWire(GoogleWire):
    """A folder of a shared drive: files.list (children, ``fullText contains``), files.get
    (metadata, ``alt=media``, export), changes.getStartPageToken, changes.list. Shared-drive
    items are left out of requests without ``supportsAllDrives`` /
    ``includeItemsFromAllDrives``, as Drive does; a stale page token gets 400."""

    scope = f"/drives/{SHARED}/{FOLDER}"
    spec = google_spec("drive-v3")
    lists_by_folder = True

    def adapter(self) -> GoogleConnector:
        return GoogleConnector()

    def add_unlistable(self, corpus: FakeCorpus, name: str, content: str) -> FakeDoc:
        return corpus.add(name, content, f"{self.scope}/sealed", extra={"parent": SUBFOLDER})

    def expired_reply(self, request: httpx.Request) -> httpx.Response:
        return google_error("invalidPageToken", 400)

    def error_reply(self, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
        return google_error(status, status, headers)

    def invalid_grant_reply(self) -> httpx.Response:
        return httpx.Response(400, json=sample("errors")["invalid_grant"])

    def answer(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        assert isinstance(corpus, GoogleCorpus)
        assert request.url.host == "www.googleapis.com", request.url
        path = unquote(request.url.path).removeprefix(DRIVE)
        token = one(request, "pageToken")
        if path == "/about":
            user = {
                "kind": "drive#user",
                "displayName": "Megan Bowen",
                "emailAddress": "megan@example.com",
            }
            return httpx.Response(200, json={"user": user})
        if path == "/drives":
            return httpx.Response(200, json={"kind": "drive#driveList", "drives": [SHARED_DRIVE]})
        if path == "/changes/startPageToken":
            if one(request, "driveId") != SHARED or one(request, "supportsAllDrives") != "true":
                return httpx.Response(
                    200, json={"kind": "drive#startPageToken", "startPageToken": "1"}
                )
            return httpx.Response(
                200, json={"kind": "drive#startPageToken", "startPageToken": str(corpus.stamp())}
            )
        if path == "/changes":
            if not shared_drive_flags(request):
                body = {
                    "kind": "drive#changeList",
                    "changes": [],
                    "newStartPageToken": str(corpus.stamp()),
                }
                return httpx.Response(200, json=body)
            return httpx.Response(200, json=changes_json(corpus, token or ""))
        if path == "/files":
            return self._list(request, corpus, token)
        if m := re.fullmatch(r"/files/([^/]+)(/export)?", path):
            doc = corpus.by_raw(m.group(1))
            if doc is None or (one(request, "supportsAllDrives") != "true" and not m.group(2)):
                return google_error("driveNotFound", 404)
            if m.group(2):
                return httpx.Response(
                    200,
                    content=doc.content,
                    headers={"content-type": one(request, "mimeType") or ""},
                )
            if one(request, "alt") == "media":
                return httpx.Response(200, content=doc.content)
            return httpx.Response(200, json=file_json(doc, corpus))
        return google_error(404, 404)

    def _list(
        self, request: httpx.Request, corpus: GoogleCorpus, token: str | None
    ) -> httpx.Response:
        empty = {"kind": "drive#fileList", "incompleteSearch": False, "files": []}
        if not shared_drive_flags(request) or one(request, "corpora") != "drive":
            return httpx.Response(200, json=empty)
        q = one(request, "q") or ""
        if m := re.search(r"fullText contains '((?:[^'\\]|\\.)*)'", q):
            docs, nxt = corpus.search(m.group(1).replace("\\'", "'"), token)
        elif re.search(rf"'{FOLDER}' in parents", q):
            docs, nxt = corpus.listing(token, self.scope)
            docs = [d for d in docs if d.extra.get("parent", FOLDER) == FOLDER]
            if not token and any(d.extra.get("parent") == SUBFOLDER for d in corpus.live()):
                body = {**empty, "files": [_subfolder()] + [file_json(d, corpus) for d in docs]}
                return httpx.Response(200, json={**body, **({"nextPageToken": nxt} if nxt else {})})
        elif m := re.search(r"'([^']+)' in parents", q):
            docs = [d for d in corpus.live() if d.extra.get("parent") == m.group(1)]
            nxt = None
        else:
            return httpx.Response(400, json=sample("errors")["invalidPageToken"])
        body = {**empty, "files": [file_json(d, corpus) for d in docs]}
        if nxt:
            body["nextPageToken"] = nxt
        return httpx.Response(200, json=body)


def _subfolder() -> dict[str, Any]:
    """The ``sealed`` subfolder as files.list shows a folder."""
    return {
        "kind": "drive#file",
        "id": SUBFOLDER,
        "name": "sealed",
        "mimeType": "application/vnd.google-apps.folder",
        "parents": [FOLDER],
        "driveId": SHARED,
    }
