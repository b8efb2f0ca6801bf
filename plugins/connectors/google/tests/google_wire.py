"""Google's APIs faked at the wire: answers built from the documented resource samples in
``tests/data`` (Gmail message, history, profile; Drive file; Calendar event; People person;
error bodies) filled with the contract suite's documents. This module has the shared parts
and Gmail; ``drive_wire`` and ``calendar_wire`` the rest.

History ids, Drive page tokens and sync tokens are ``generation * 1,000,000 + seq`` of the
corpus: a token of an older generation (after ``expire_cursors``) gets the vendor's answer
for an expired one (Gmail 404, Drive 400 ``Invalid Value``, Calendar 410, People 400
``EXPIRED_SYNC_TOKEN``).

Documented by (each method's page is its ``x-docs`` in ``data/spec/gmail-v1.json``):
https://developers.google.com/gmail/api/reference/rest/v1/users.messages/list,
https://developers.google.com/gmail/api/reference/rest/v1/users.messages/get,
https://developers.google.com/gmail/api/reference/rest/v1/users.history/list,
https://developers.google.com/gmail/api/reference/rest/v1/users.threads/get,
https://developers.google.com/gmail/api/guides/sync,
https://developers.google.com/gmail/api/guides/handle-errors.
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
from nyla.testing.spec_select import keep_selected, parse_google_fields
from nyla.testing.vendor_spec import VendorSpec
from nyla_connector_google import GoogleConnector

DATA = Path(__file__).parent / "data"
GMAIL = "/gmail/v1/users/me"


def google_spec(api: str) -> VendorSpec:
    """The discovery document of ``api`` (``gmail-v1``, ``drive-v3``, ``calendar-v3``,
    ``people-v1``), the methods nyla calls (``data/spec/extract.py`` says whence and how to
    refresh them); every exchange with a Google wire is checked against it."""
    return VendorSpec.load(DATA / "spec" / f"{api}.json")


STEP = 1_000_000
#: a user label as labels.list documents it
LABELS = [
    {
        "id": "Label_12",
        "name": "Finance",
        "type": "user",
        "messageListVisibility": "show",
        "labelListVisibility": "labelShow",
    }
]


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


class GoogleWire(ConnectorWire):
    """A Google API's wire: what :meth:`answer` builds is cut to the request's ``fields``,
    as Google answers a partial request (``fields`` parameter: only the fields named,
    https://developers.google.com/drive/api/guides/fields-parameter)."""

    def throttle_reply(self, seconds: int) -> httpx.Response:
        """Google's other throttling answer: 403 ``userRateLimitExceeded``, with no time to
        wait (developers.google.com/gmail/api/guides/handle-errors#resolve_a_403_error_user_rate_limit_exceeded:
        "retry using exponential backoff")."""
        return google_error("403_rate", 403)

    def answer(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        """The full answer (before ``fields`` is applied)."""
        raise NotImplementedError

    def handle(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        response = self.answer(request, corpus)
        fields = request.url.params.get("fields")
        kind = response.headers.get("content-type", "")
        if not fields or response.status_code >= 300 or "json" not in kind:
            return response
        body = keep_selected(json.loads(response.read()), parse_google_fields(fields))
        headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
        return httpx.Response(response.status_code, headers=headers, json=body)


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

    def stamp(self, seq: int | None = None) -> int:
        """The history id / start token of ``seq`` (default: now)."""
        return self.generation * STEP + (self.seq if seq is None else seq)

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


class GmailWire(GoogleWire):
    """Gmail's INBOX label: messages.list (``q=``, ``labelIds``), messages.get in the
    three formats, attachments.get, getProfile, history.list (404 for an expired history
    id)."""

    scope = "/mail/INBOX"
    spec = google_spec("gmail-v1")

    def adapter(self) -> GoogleConnector:
        return GoogleConnector()

    def expired_reply(self, request: httpx.Request) -> httpx.Response:
        return google_error(404, 404)

    def error_reply(self, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
        return google_error(status, status, headers)

    def invalid_grant_reply(self) -> httpx.Response:
        return httpx.Response(400, json=sample("errors")["invalid_grant"])

    def answer(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
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
        if path == "/labels":
            labels = [{"id": "INBOX", "name": "INBOX", "type": "system"}, *LABELS]
            return httpx.Response(200, json={"labels": labels})
        if m := re.fullmatch(r"/threads(?:/([^/]+))?", path):
            return self._threads(request, corpus, m.group(1))
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

    def _threads(
        self, request: httpx.Request, corpus: GoogleCorpus, thread: str | None
    ) -> httpx.Response:
        """threads.list (one thread per ``threadId`` of the live documents) and threads.get."""
        by_thread: dict[str, list[FakeDoc]] = {}
        for doc in corpus.live():
            by_thread.setdefault(doc.extra.get("threadId", corpus.raw(doc.id)), []).append(doc)
        if thread is None:
            found = [
                {
                    "id": t,
                    "snippet": docs[0].content.decode()[:100],
                    "historyId": str(corpus.stamp()),
                }
                for t, docs in by_thread.items()
            ]
            return httpx.Response(200, json={"threads": found, "resultSizeEstimate": len(found)})
        if thread not in by_thread:
            return google_error(404, 404)
        wanted = params(request).get("metadataHeaders")
        messages = [
            message_json(d, corpus, one(request, "format") or "full", wanted)
            for d in by_thread[thread]
        ]
        return httpx.Response(
            200, json={"id": thread, "historyId": str(corpus.stamp()), "messages": messages}
        )
