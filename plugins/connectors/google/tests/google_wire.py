"""Google's APIs faked at the wire: answers built from the documented resource samples in
``tests/data`` (Gmail message, history, profile; Drive file; Calendar event; People person;
error bodies) filled with the contract suite's documents.

History ids, Drive page tokens and sync tokens are ``generation * 1,000,000 + seq`` of the
corpus: a token of an older generation (after ``expire_cursors``) gets the vendor's answer
for an expired one (Gmail 404, Drive 400 ``Invalid Value``, Calendar 410, People 400
``EXPIRED_SYNC_TOKEN``).
"""

from __future__ import annotations

import base64
import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import httpx

from nyla.testing.fake_vendor import ConnectorWire, FakeCorpus, FakeDoc, StaleCursorError
from nyla_connector_google import GoogleConnector

DATA = Path(__file__).parent / "data"
GMAIL = "/gmail/v1/users/me"
DRIVE = "/drive/v3"
SHARED = "0AFinanceSharedDrivePVA"
FOLDER = "1FolderReportsXyZ"
STEP = 1_000_000


@cache
def _sample(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text())


def sample(name: str) -> dict[str, Any]:
    """A fresh copy of a documented payload from ``tests/data``."""
    return copy.deepcopy(_sample(name))


def google_error(
    key: str | int, status: int, headers: dict[str, str] | None = None
) -> httpx.Response:
    """An error answer in Google's shape (``{"error": {"code", "message", "errors"}}``)."""
    body = sample("errors").get(str(key)) or {
        "error": {"code": status, "message": f"error {status}", "status": "UNKNOWN"}
    }
    return httpx.Response(status, headers=headers, json=body)


def b64(data: bytes) -> str:
    """Gmail's base64url without padding."""
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def params(request: httpx.Request) -> dict[str, list[str]]:
    """The request's query parameters (every value)."""
    return parse_qs(urlsplit(str(request.url)).query)


def one(request: httpx.Request, name: str) -> str | None:
    """One query parameter."""
    values = params(request).get(name)
    return values[0] if values else None


def iso(doc: FakeDoc) -> str:
    """The document's modification time as Google writes it."""
    return doc.modified.strftime("%Y-%m-%dT%H:%M:%S.000Z")


class GoogleCorpus(FakeCorpus):
    """A corpus whose document ids are this connector's item ids (``mail:<id>``,
    ``file:<id>``, ...) over vendor ids the wire hands out."""

    def __init__(self, prefix: str, raw_prefix: str, page_size: int = 3) -> None:
        super().__init__(page_size)
        self.prefix = prefix
        self.raw_prefix = raw_prefix

    def add(self, name: str, content: str | bytes, folder: str = "/", **kw: Any) -> FakeDoc:
        doc = super().add(name, content, folder, **kw)
        seq = int(doc.id.removeprefix("doc"))
        new_id = f"{self.prefix}{self.raw_prefix}{seq:05x}"
        self.docs[new_id] = self.docs.pop(doc.id)
        doc.id = new_id
        self.log[-1] = (self.log[-1][0], new_id)
        return doc

    def raw(self, doc_id: str) -> str:
        """The vendor id of a document (live or deleted)."""
        return doc_id.removeprefix(self.prefix)

    def by_raw(self, raw: str) -> FakeDoc | None:
        """A live document by its vendor id."""
        return self.get(self.prefix + raw)

    def stamp(self) -> int:
        """The current history id / start token."""
        return self.generation * STEP + self.seq

    def since(self, token: str) -> int:
        """The corpus sequence a token stands for; an older generation's token is stale."""
        try:
            value = int(token)
        except ValueError as exc:
            raise StaleCursorError(f"malformed token {token!r}") from exc
        if value // STEP != self.generation:
            raise StaleCursorError(f"token {token!r} expired")
        return value % STEP

    def changed_since(self, seq: int) -> list[str]:
        """Ids changed after ``seq`` (each once, in the order of their last change)."""
        last: dict[str, int] = {}
        for at, doc_id in self.log:
            if at > seq:
                last[doc_id] = at
        return sorted(last, key=last.__getitem__)


# ---- Gmail --------------------------------------------------------------------------------


def sender(doc: FakeDoc) -> str:
    """The From header of a document."""
    name, address = doc.extra.get("from") or (doc.author, "ada@example.com")
    return f"{name} <{address}>"


def message_json(
    doc: FakeDoc, corpus: GoogleCorpus, fmt: str = "full", wanted: Any = None
) -> dict[str, Any]:
    """The documented message sample carrying ``doc`` in ``format`` full, metadata or raw."""
    raw_id = corpus.raw(doc.id)
    msg = sample("gmail_message")
    text = doc.content.decode("utf-8", "replace")
    msg.update(
        id=raw_id,
        threadId=doc.extra.get("threadId", raw_id),
        labelIds=list(doc.extra.get("labels", ["INBOX", "UNREAD"])),
        snippet=text[:200],
        historyId=str(corpus.stamp()),
        internalDate=str(int(doc.modified.timestamp() * 1000)),
        sizeEstimate=len(doc.content) + 900,
    )
    if fmt == "raw":
        msg.pop("payload")
        msg["raw"] = b64(doc.content)
        return msg
    values = {
        "From": sender(doc),
        "Subject": doc.name,
        "To": doc.extra.get("to", "Megan Bowen <megan@example.com>"),
    }
    for header in msg["payload"]["headers"]:
        header["value"] = values.get(header["name"], header["value"])
    if fmt == "metadata":
        keep = {w.lower() for w in wanted or []}
        msg["payload"] = {
            "mimeType": msg["payload"]["mimeType"],
            "headers": [h for h in msg["payload"]["headers"] if h["name"].lower() in keep],
        }
        return msg
    alternative = msg["payload"]["parts"][0]
    alternative["parts"][0]["body"] = {"size": len(doc.content), "data": b64(doc.content)}
    alternative["parts"][1]["body"] = {
        "size": len(doc.content) + 30,
        "data": b64(b'<div dir="ltr">' + doc.content + b"</div>"),
    }
    attachment = doc.extra.get("attachment")
    if attachment is None:
        msg["payload"]["parts"] = [alternative]
    else:
        part = msg["payload"]["parts"][1]
        part["filename"], content = attachment
        part["body"] = {"attachmentId": f"ANGjdJ{len(corpus.log)}x{raw_id}", "size": len(content)}
    return msg


def history_json(corpus: GoogleCorpus, start: str, token: str | None) -> dict[str, Any]:
    """``history.list`` from ``start``: added (or changed) documents as ``messagesAdded``,
    removed ones as ``messagesDeleted``, paged by the corpus's page size."""
    changed = corpus.changed_since(corpus.since(start))
    offset = int(token or 0)
    page = changed[offset : offset + corpus.page_size]
    records = []
    for doc_id in page:
        raw_id = corpus.raw(doc_id)
        ref = {"id": raw_id, "threadId": raw_id}
        if doc_id in corpus.docs:
            labels = list(corpus.docs[doc_id].extra.get("labels", ["INBOX", "UNREAD"]))
            entry = {"messagesAdded": [{"message": {**ref, "labelIds": labels}}]}
        else:
            entry = {"messagesDeleted": [{"message": {**ref, "labelIds": ["INBOX"]}}]}
        records.append({"id": str(corpus.stamp()), "messages": [ref], **entry})
    body: dict[str, Any] = {"historyId": str(corpus.stamp())}
    if records:
        body["history"] = records
    if offset + corpus.page_size < len(changed):
        body["nextPageToken"] = str(offset + corpus.page_size)
    return body


def gmail_words(q: str) -> str:
    """The plain words of a Gmail query, with the values of ``subject:`` and ``from:``."""
    q = re.sub(r"\b(?:after|before|is|has|in|label):\S+", " ", q)
    return re.sub(r"\b(?:subject|from|to):\(?([^)\s]*)\)?", r"\1", q)


class GmailWire(ConnectorWire):
    """Gmail's INBOX label: messages.list (``q=``, ``labelIds``), messages.get in the
    three formats, attachments.get, getProfile, history.list (404 for an expired history
    id)."""

    scope = "/mail/INBOX"

    def adapter(self) -> GoogleConnector:
        return GoogleConnector()

    def expired_reply(self, request: httpx.Request) -> httpx.Response:
        return google_error(404, 404)

    def error_reply(self, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
        return google_error(status, status, headers)

    def invalid_grant_reply(self) -> httpx.Response:
        return httpx.Response(400, json=sample("errors")["invalid_grant"])

    def handle(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        assert isinstance(corpus, GoogleCorpus)
        assert request.url.host == "gmail.googleapis.com", request.url
        path = unquote(request.url.path).removeprefix(GMAIL)
        token = one(request, "pageToken")
        if path == "/profile":
            body = sample("gmail_profile")
            body["historyId"] = str(corpus.stamp())
            return httpx.Response(200, json=body)
        if path == "/history":
            if one(request, "labelId") not in (None, "INBOX"):
                return httpx.Response(200, json={"historyId": str(corpus.stamp())})
            return httpx.Response(
                200, json=history_json(corpus, one(request, "startHistoryId") or "", token)
            )
        if path == "/messages":
            if one(request, "labelIds") not in (None, "INBOX"):
                return httpx.Response(200, json={"resultSizeEstimate": 0})
            q = one(request, "q")
            docs, nxt = corpus.search(gmail_words(q), token) if q else corpus.listing(token)
            body: dict[str, Any] = {"resultSizeEstimate": len(docs)}
            if docs:
                body["messages"] = [
                    {"id": corpus.raw(d.id), "threadId": d.extra.get("threadId", corpus.raw(d.id))}
                    for d in docs
                ]
            if nxt:
                body["nextPageToken"] = nxt
            return httpx.Response(200, json=body)
        if m := re.fullmatch(r"/messages/([^/]+)/attachments/([^/]+)", path):
            doc = corpus.by_raw(m.group(1))
            if doc is None or "attachment" not in doc.extra:
                return google_error(404, 404)
            data = doc.extra["attachment"][1]
            return httpx.Response(200, json={"size": len(data), "data": b64(data)})
        if m := re.fullmatch(r"/messages/([^/]+)", path):
            doc = corpus.by_raw(m.group(1))
            if doc is None:
                return google_error(404, 404)
            fmt = one(request, "format") or "full"
            wanted = params(request).get("metadataHeaders")
            return httpx.Response(200, json=message_json(doc, corpus, fmt, wanted))
        return google_error(404, 404)


# ---- Drive --------------------------------------------------------------------------------


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


class DriveWire(ConnectorWire):
    """A folder of a shared drive: files.list (children, ``fullText contains``), files.get
    (metadata, ``alt=media``, export), changes.getStartPageToken, changes.list. Shared-drive
    items are left out of requests without ``supportsAllDrives`` /
    ``includeItemsFromAllDrives``, as Drive does; a stale page token gets 400."""

    scope = f"/drives/{SHARED}/{FOLDER}"

    def adapter(self) -> GoogleConnector:
        return GoogleConnector()

    def expired_reply(self, request: httpx.Request) -> httpx.Response:
        return google_error("invalidPageToken", 400)

    def error_reply(self, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
        return google_error(status, status, headers)

    def invalid_grant_reply(self) -> httpx.Response:
        return httpx.Response(400, json=sample("errors")["invalid_grant"])

    def handle(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        assert isinstance(corpus, GoogleCorpus)
        assert request.url.host == "www.googleapis.com", request.url
        path = unquote(request.url.path).removeprefix(DRIVE)
        token = one(request, "pageToken")
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
        elif m := re.search(r"'([^']+)' in parents", q):
            docs = [d for d in corpus.live() if d.extra.get("parent") == m.group(1)]
            nxt = None
        else:
            return httpx.Response(400, json=sample("errors")["invalidPageToken"])
        body = {**empty, "files": [file_json(d, corpus) for d in docs]}
        if nxt:
            body["nextPageToken"] = nxt
        return httpx.Response(200, json=body)
