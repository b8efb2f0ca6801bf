"""kDrive (REST, JSON) and Infomaniak CalDAV (WebDAV XML) faked at the wire over the
contract suite's documents, answers shaped from the samples in ``tests/data``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from xml.sax.saxutils import escape

import httpx

from nyla.sdk.connectors import TokenGrant
from nyla.testing.fake_vendor import ConnectorWire, FakeCorpus, FakeDoc
from nyla_connector_infomaniak import InfomaniakConnector

DATA = Path(__file__).parent / "data"
DRIVE = "140946"
DIR = 57
HOME = "/calendars/contract%40example.com/work/"


def sample(name: str) -> Any:
    text = (DATA / name).read_text()
    return json.loads(text) if name.endswith(".json") else text


class PrefixedCorpus(FakeCorpus):
    """Documents whose ids are the adapter's item ids (``kdrive:<n>``, ``caldav:<href>``)."""

    def __init__(self, make_id: Any, page_size: int = 3) -> None:
        super().__init__(page_size)
        self.make_id = make_id

    def add(self, name: str, content: str | bytes, folder: str = "/", **kw: Any) -> FakeDoc:
        doc = super().add(name, content, folder, **kw)
        new_id = self.make_id(int(doc.id.removeprefix("doc")))
        self.docs[new_id] = self.docs.pop(doc.id)
        doc.id = new_id
        self.log[-1] = (self.log[-1][0], new_id)
        return doc


def _params(request: httpx.Request) -> dict[str, str]:
    return dict(request.url.params)


def _all(fetch: Any) -> list[FakeDoc]:
    """Every page of a corpus listing (for APIs that do not page)."""
    docs, cursor = fetch(None)
    while cursor:
        more, cursor = fetch(cursor)
        docs += more
    return docs


class KDriveWire(ConnectorWire):
    """kDrive's v3 API over the Reports directory (id 57)."""

    scope = f"/kdrive/{DIR}"

    def adapter(self) -> InfomaniakConnector:
        return InfomaniakConnector()

    def settings(self) -> dict[str, Any]:
        return {"driveId": DRIVE}

    def grant(self) -> TokenGrant:
        return TokenGrant(access_token="pat-1")

    def error_reply(self, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
        body = sample("kdrive_errors.json").get(str(status)) or {"result": "error"}
        return httpx.Response(status, headers=headers, json=body)

    def expired_reply(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json=sample("kdrive_errors.json")["invalid_cursor"])

    def file_json(self, doc: FakeDoc) -> dict[str, Any]:
        raw = sample("kdrive_file.json")
        stamp = int(doc.modified.timestamp())
        raw.update(
            id=int(doc.id.removeprefix("kdrive:")),
            name=doc.name,
            size=len(doc.content),
            mime_type=doc.mime,
            last_modified_at=stamp,
            path=f"/Common documents/Reports/{doc.name}",
        )
        return raw

    def _page(self, docs: list[FakeDoc], cursor: str | None) -> httpx.Response:
        body = {"result": "success", "data": [self.file_json(d) for d in docs]}
        body |= {"cursor": cursor, "has_more": bool(cursor)}
        return httpx.Response(200, json=body)

    def handle(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        path, p = request.url.path, _params(request)
        base = f"/3/drive/{DRIVE}/files"
        if path == f"{base}/{DIR}":
            return httpx.Response(
                200, json={"result": "success", "data": sample("kdrive_dir.json")}
            )
        if path == f"{base}/{DIR}/files":
            return self._page(*corpus.listing(p.get("cursor"), self.scope))
        if path == f"{base}/search":
            assert p.get("directory_id") == str(DIR), "search is scoped to the directory"
            return self._page(*corpus.search(p["query"], p.get("cursor")))
        if path in (f"{base}/{DIR}/listing", f"{base}/{DIR}/listing/continue"):
            docs, gone, nxt, delta = corpus.delta(p.get("cursor"), self.scope)
            actions = [
                {"action": "file_delete", "file_id": int(i.removeprefix("kdrive:"))} for i in gone
            ]
            data = {"files": [self.file_json(d) for d in docs], "actions": actions}
            data |= {"cursor": nxt or delta, "has_more": bool(nxt)}
            return httpx.Response(200, json={"result": "success", "data": data})
        if m := re.fullmatch(rf"/2/drive/{DRIVE}/files/(\d+)/download", path):
            doc = corpus.get(f"kdrive:{m.group(1)}")
            return httpx.Response(200, content=doc.content) if doc else self.error_reply(404)
        if m := re.fullmatch(rf"{base}/(\d+)", path):
            doc = corpus.get(f"kdrive:{m.group(1)}")
            if doc is None:
                return self.error_reply(404)
            return httpx.Response(200, json={"result": "success", "data": self.file_json(doc)})
        return self.error_reply(404)


def ics(doc: FakeDoc) -> str:
    """The iCalendar sample carrying ``doc`` (title, text, change time)."""
    text = doc.content.decode("utf-8", "replace").replace("\n", "\\n")
    return (
        sample("event.ics")
        .replace("{uid}", doc.id)
        .replace("{summary}", doc.name)
        .replace("{description}", text)
        .replace("{modified}", doc.modified.strftime("%Y%m%dT%H%M%SZ"))
    )


def budget_event() -> str:
    """The sample event ``e1``, "Budget review", as iCalendar text."""
    return (
        sample("event.ics")
        .replace("{uid}", "e1")
        .replace("{summary}", "Budget review")
        .replace("{description}", "Q4 numbers")
        .replace("{modified}", "20260105T093000Z")
    )


def multistatus(responses: list[str], token: str | None = None) -> httpx.Response:
    """A WebDAV 207 Multi-Status."""
    tail = f"<d:sync-token>{escape(token)}</d:sync-token>" if token else ""
    body = (
        '<?xml version="1.0" encoding="utf-8"?><d:multistatus xmlns:d="DAV:" '
        f'xmlns:cal="urn:ietf:params:xml:ns:caldav">{"".join(responses)}{tail}</d:multistatus>'
    )
    return httpx.Response(
        207, content=body.encode(), headers={"Content-Type": "application/xml; charset=utf-8"}
    )


def event_response(doc: FakeDoc) -> str:
    href = doc.id.removeprefix("caldav:")
    return (
        f"<d:response><d:href>{escape(href)}</d:href><d:propstat><d:prop>"
        f'<d:getetag>"{doc.etag}"</d:getetag><d:getcontentlength>{len(doc.content)}</d:getcontentlength><cal:calendar-data>{escape(ics(doc))}</cal:calendar-data>'
        "</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"
    )


class CalDavWire(ConnectorWire):
    """Infomaniak's CalDAV server (SabreDAV-style answers) over the calendar ``work``."""

    scope = "/calendar/work"

    def adapter(self) -> InfomaniakConnector:
        return InfomaniakConnector()

    def settings(self) -> dict[str, Any]:
        return {"caldavUser": "contract@example.com"}

    def grant(self) -> TokenGrant:
        return TokenGrant(access_token="pat-1")

    def search_term(self, doc: FakeDoc) -> str:
        return doc.name.rsplit(".", 1)[0]

    def expired_reply(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            403,
            content=sample("valid_sync_token.xml").encode(),
            headers={"Content-Type": "application/xml"},
        )

    def handle(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        path = unquote(request.url.path)
        body = request.content.decode()
        if request.method == "GET" and path.startswith(unquote(HOME)):
            doc = corpus.get(f"caldav:{HOME}{path.rsplit('/', 1)[-1]}")
            return httpx.Response(200, content=doc.content) if doc else self.error_reply(404)
        if request.method != "REPORT" or path != unquote(HOME):
            return self.error_reply(404)
        if "<d:sync-collection" in body:
            token = re.search(r"<d:sync-token>(.*?)</d:sync-token>", body).group(1) or None  # type: ignore[union-attr]
            docs, gone, nxt, delta = corpus.delta(token, self.scope)
            responses = [event_response(d) for d in docs]
            responses += [
                f"<d:response><d:href>{escape(i.removeprefix('caldav:'))}</d:href><d:status>HTTP/1.1 404 Not Found</d:status></d:response>"
                for i in gone
            ]
            if nxt:
                responses.append(
                    f"<d:response><d:href>{HOME}</d:href><d:status>HTTP/1.1 507 Insufficient Storage</d:status></d:response>"
                )
            return multistatus(responses, nxt or delta)
        if "<c:text-match" in body:
            words = re.search(r"<c:text-match[^>]*>(.*?)</c:text-match>", body).group(1)  # type: ignore[union-attr]
            docs = _all(lambda c: corpus.search(words, c))
        else:
            assert "<c:time-range" in body
            docs = _all(lambda c: corpus.listing(c, self.scope))
        return multistatus([event_response(d) for d in docs])


def caldav_corpus() -> PrefixedCorpus:
    return PrefixedCorpus(lambda n: f"caldav:{HOME}{n:04d}.ics")


def kdrive_corpus() -> PrefixedCorpus:
    return PrefixedCorpus(lambda n: f"kdrive:{n}")
