"""Microsoft Graph faked at the wire: answers built from the documented resource samples in
``tests/data`` (message, driveItem, site, drive, event, contact, attachment, errors) filled
with the contract suite's documents.

Documented by (each operation's page is its ``x-docs`` in ``data/spec/graph-v1.json``):
https://learn.microsoft.com/en-us/graph/api/message-delta,
https://learn.microsoft.com/en-us/graph/api/user-list-messages,
https://learn.microsoft.com/en-us/graph/api/message-get,
https://learn.microsoft.com/en-us/graph/api/driveitem-delta,
https://learn.microsoft.com/en-us/graph/api/driveitem-list-children,
https://learn.microsoft.com/en-us/graph/api/driveitem-search,
https://learn.microsoft.com/en-us/graph/api/driveitem-get-content,
https://learn.microsoft.com/en-us/graph/paging, https://learn.microsoft.com/en-us/graph/errors."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import httpx

from nyla.testing.fake_vendor import ConnectorWire, FakeCorpus, FakeDoc
from nyla.testing.spec_select import keep_odata_selected
from nyla.testing.vendor_spec import VendorSpec
from nyla_connector_msft import MsftConnector

GRAPH = "https://graph.microsoft.com/v1.0"
DATA = Path(__file__).parent / "data"
SITE = "contoso.sharepoint.com,da60e844-ba1d-49bc-b4d4-d5e36bae9019,712a596e-90a1-49e3-9b48-bfa80bee8740"
DRIVE = "b!CbtYWrofwUGBJWnaJkNwoNrBLp_kC3RKklSXPwrdeP3yH8_qmH9xT5Y6RODPNfYI"


def graph_spec() -> VendorSpec:
    """Graph v1.0 as its CSDL metadata describes it, the operations nyla calls
    (``data/spec/extract.py`` says whence and how to refresh it); every exchange with the
    Graph fakes is checked against it."""
    return VendorSpec.load(DATA / "spec" / "graph-v1.json", prefix=r"^/v1\.0")


@cache
def _sample(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text())


def sample(name: str) -> dict[str, Any]:
    """A fresh copy of a documented Graph payload from ``tests/data``."""
    return copy.deepcopy(_sample(name))


def graph_error(
    key: str | int, status: int, headers: dict[str, str] | None = None
) -> httpx.Response:
    """An error answer in Graph's shape (``{"error": {"code", "message"}}``)."""
    body = sample("errors").get(str(key)) or {"error": {"code": str(status), "message": "error"}}
    return httpx.Response(status, headers=headers, json=body)


class GraphCorpus(FakeCorpus):
    """A corpus whose document ids are this connector's item ids (``mail:<id>``,
    ``file:<drive>:<id>``) over Graph ids the wire hands out."""

    def __init__(self, prefix: str, raw_prefix: str, page_size: int = 3) -> None:
        super().__init__(page_size)
        self.prefix = prefix
        self.raw_prefix = raw_prefix

    def add(self, name: str, content: str | bytes, folder: str = "/", **kw: Any) -> FakeDoc:
        doc = super().add(name, content, folder, **kw)
        seq = int(doc.id.removeprefix("doc"))
        new_id = f"{self.prefix}{self.raw_prefix}{seq:05d}"
        self.docs[new_id] = self.docs.pop(doc.id)
        doc.id = new_id
        self.log[-1] = (self.log[-1][0], new_id)
        return doc

    def raw(self, doc_id: str) -> str:
        """The Graph id of a document."""
        return doc_id.removeprefix(self.prefix)

    def by_raw(self, raw: str) -> FakeDoc | None:
        """A document by its Graph id."""
        return self.get(self.prefix + raw)

    def deleted_raw(self, doc_id: str) -> str:
        """The Graph id of a deleted document."""
        return doc_id.removeprefix(self.prefix)


def _iso(doc: FakeDoc) -> str:
    return doc.modified.isoformat().replace("+00:00", "Z")


def message_json(doc: FakeDoc, corpus: GraphCorpus) -> dict[str, Any]:
    """The documented message sample carrying ``doc``."""
    raw = sample("message")
    text = doc.content.decode("utf-8", "replace")
    raw.update(
        id=corpus.raw(doc.id),
        subject=doc.name,
        bodyPreview=text[:255],
        receivedDateTime=_iso(doc),
        lastModifiedDateTime=_iso(doc),
        changeKey=doc.etag,
        hasAttachments=bool(doc.extra.get("attachments")),
        isRead=bool(doc.extra.get("isRead", False)),
        body={"contentType": "text", "content": text},
    )
    sender = doc.extra.get("from")
    if sender:
        name, address = sender
        raw["from"] = raw["sender"] = {"emailAddress": {"name": name, "address": address}}
    return raw


def drive_item_json(
    doc: FakeDoc, corpus: GraphCorpus, drive: str = DRIVE, delta: bool = False
) -> dict[str, Any]:
    """The documented driveItem sample carrying ``doc``."""
    raw = sample("drive_item")
    # the suite files documents under the data source's path; the drive knows the part below
    folder = doc.folder.removeprefix(f"/sites/{SITE}/{drive}").rstrip("/")
    raw.update(
        id=corpus.raw(doc.id),
        name=doc.name,
        size=len(doc.content),
        eTag=f'"{{{doc.etag}}},{doc.version}"',
        cTag=f'"c:{{{doc.etag}}},{doc.version}"',
        lastModifiedDateTime=_iso(doc),
        webUrl=f"https://contoso.sharepoint.com/sites/Finance/Shared%20Documents{folder}/{doc.name}",
    )
    raw["lastModifiedBy"]["user"]["displayName"] = doc.author
    raw["file"]["mimeType"] = doc.mime
    raw["parentReference"].update(driveId=drive, path=f"/drives/{drive}/root:{folder}")
    if delta:
        # driveitem-delta, Remarks: delta answers carry no parentReference.path ("track
        # items by id"); the parent is named by its id only
        del raw["parentReference"]["path"]
        raw["parentReference"]["id"] = folder_id(folder)
    return raw


#: the drive's root and the Reports folder (the sample's parentReference.id)
ROOT_ID = "01BYE5RZ56Y2GOVW7725BZO354PWSELROOT"
REPORTS_ID = "01BYE5RZ56Y2GOVW7725BZO354PWSELRRZ"


def folder_id(folder: str) -> str:
    """The id of a folder below the drive's root (``/Reports/A``), ``ROOT_ID`` for the root."""
    folder = folder.rstrip("/")
    if not folder:
        return ROOT_ID
    if folder == "/Reports":
        return REPORTS_ID
    return "01BYE5RZF" + hashlib.sha1(folder.encode()).hexdigest()[:25].upper()


def folder_json(folder: str, drive: str = DRIVE) -> dict[str, Any]:
    """A folder as delta answers it (driveItem with a ``folder`` facet; the root with
    ``root``)."""
    folder = folder.rstrip("/")
    if not folder:
        return {"id": ROOT_ID, "name": "root", "root": {}, "folder": {"childCount": 1}}
    parent, _, name = folder.rpartition("/")
    return {
        "id": folder_id(folder),
        "name": name,
        "folder": {"childCount": 1},
        "parentReference": {
            "driveId": drive,
            "driveType": "documentLibrary",
            "id": folder_id(parent),
        },
    }


def folders_of(corpus: GraphCorpus, drive: str = DRIVE) -> list[dict[str, Any]]:
    """The root and every folder above the corpus' documents, parents first."""
    paths = {""}
    for doc in corpus.docs.values():
        parts = doc.folder.removeprefix(f"/sites/{SITE}/{drive}").strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            if parts[0]:
                paths.add("/" + "/".join(parts[:depth]))
    paths.add("/Reports")
    return [folder_json(p, drive) for p in sorted(paths, key=lambda p: (p.count("/"), p))]


def query(request: httpx.Request) -> dict[str, str]:
    """The request's query parameters (first value each)."""
    return {k: v[0] for k, v in parse_qs(urlsplit(str(request.url)).query).items()}


def next_link(request: httpx.Request, token: str | None) -> str | None:
    """The request's URL with ``$skiptoken`` set (Graph keeps the query in its next links)."""
    return str(request.url.copy_set_param("$skiptoken", token)) if token else None


def collection(
    value: list[Any], next_url: str | None = None, delta_url: str | None = None
) -> httpx.Response:
    """An OData collection page."""
    body: dict[str, Any] = {"@odata.context": f"{GRAPH}/$metadata#Collection", "value": value}
    if next_url:
        body["@odata.nextLink"] = next_url
    if delta_url:
        body["@odata.deltaLink"] = delta_url
    return httpx.Response(200, json=body)


def partial(request: httpx.Request, response: httpx.Response) -> httpx.Response:
    """``response`` cut to the request's ``$select``, as Graph answers it (only the selected
    properties, ``id`` and annotations: https://learn.microsoft.com/en-us/graph/query-parameters#select-parameter)."""
    select = request.url.params.get("$select")
    kind = response.headers.get("content-type", "")
    if not select or response.status_code >= 300 or "json" not in kind:
        return response
    body = keep_odata_selected(json.loads(response.read()), select)
    headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
    return httpx.Response(response.status_code, headers=headers, json=body)


class GraphWire(ConnectorWire):
    """A Graph wire: what :meth:`answer` builds is cut to the request's ``$select``."""

    spec = graph_spec()

    def answer(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        """The full answer (before ``$select`` is applied)."""
        raise NotImplementedError

    def handle(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        return partial(request, self.answer(request, corpus))


def kql_words(search: str) -> tuple[list[str], dict[str, str]]:
    """Plain words and ``field:value`` terms of a ``$search`` value."""
    text = search.strip().strip('"')
    fields = {
        m.group(1).lower(): m.group(2).strip("()")
        for m in re.finditer(r"(\w+)[:>=<]+(\([^)]*\)|\S+)", text)
    }
    plain = re.sub(r"\w+[:>=<]+(\([^)]*\)|\S+)", " ", text).split()
    return plain, fields


class MailWire(GraphWire):
    """Outlook's inbox: messages, ``$search``, ``$value``, ``messages/delta``. An expired
    delta token gets Graph's 400 ``syncStateNotFound``."""

    scope = "/mail/inbox"

    def adapter(self) -> MsftConnector:
        return MsftConnector()

    def search_term(self, doc: FakeDoc) -> str:
        return f"subject:{doc.name.rsplit('.', 1)[0]}"

    def expired_reply(self, request: httpx.Request) -> httpx.Response:
        return graph_error("syncStateNotFound", 400)

    def error_reply(self, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
        return graph_error(status, status, headers)

    def invalid_grant_reply(self) -> httpx.Response:
        return httpx.Response(400, json=sample("errors")["invalid_grant"])

    def answer(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        assert isinstance(corpus, GraphCorpus)
        path = unquote(request.url.path).removeprefix("/v1.0")
        params = query(request)
        if m := re.fullmatch(r"/me/messages/([^/]+)/\$value", path):
            doc = corpus.by_raw(m.group(1))
            return httpx.Response(200, content=doc.content) if doc else graph_error(404, 404)
        if m := re.fullmatch(r"/me/messages/([^/]+)", path):
            doc = corpus.by_raw(m.group(1))
            return (
                httpx.Response(200, json=message_json(doc, corpus))
                if doc
                else graph_error(404, 404)
            )
        base = "/me/mailFolders/inbox/messages"
        if path == f"{base}/delta":
            docs, gone, nxt, delta = corpus.delta(
                params.get("$deltatoken") or params.get("$skiptoken")
            )
            value = [message_json(d, corpus) for d in docs] + [
                {
                    "@odata.type": "#microsoft.graph.message",
                    "id": corpus.deleted_raw(i),
                    "@removed": {"reason": "deleted"},
                }
                for i in gone
            ]
            return collection(
                value,
                nxt and f"{GRAPH}{base}/delta?$skiptoken={nxt}",
                delta and f"{GRAPH}{base}/delta?$deltatoken={delta}",
            )
        if path == base:
            token = params.get("$skiptoken")
            if "$search" in params:
                words, _ = kql_words(params["$search"])
                fields = kql_words(params["$search"])[1]
                words += [fields["subject"]] if "subject" in fields else []
                docs, nxt = corpus.search(" ".join(words), token)
            else:
                docs, nxt = corpus.listing(token)
            return collection([message_json(d, corpus) for d in docs], next_link(request, nxt))
        return graph_error(404, 404)


class DriveWire(GraphWire):
    """A SharePoint document library (``Reports`` folder): children, folder search,
    download, ``root/delta`` (410 ``resyncRequired`` for an expired token)."""

    scope = f"/sites/{SITE}/{DRIVE}/Reports"

    def adapter(self) -> MsftConnector:
        return MsftConnector()

    def expired_reply(self, request: httpx.Request) -> httpx.Response:
        return graph_error("resyncRequired", 410)

    def error_reply(self, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
        return graph_error(status, status, headers)

    def answer(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        assert isinstance(corpus, GraphCorpus)
        path = unquote(request.url.path).removeprefix("/v1.0")
        params = query(request)
        drive = f"/drives/{DRIVE}"
        if m := re.fullmatch(rf"{re.escape(drive)}/items/([^/]+)/content", path):
            doc = corpus.by_raw(m.group(1))
            return httpx.Response(200, content=doc.content) if doc else graph_error(404, 404)
        if m := re.fullmatch(rf"{re.escape(drive)}/items/([^/]+)", path):
            known = {f["id"]: f for f in folders_of(corpus)}
            if m.group(1) in known:
                return httpx.Response(200, json=known[m.group(1)])
            doc = corpus.by_raw(m.group(1))
            return (
                httpx.Response(200, json=drive_item_json(doc, corpus))
                if doc
                else graph_error(404, 404)
            )
        token = params.get("$skiptoken") or params.get("token")
        if path == f"{drive}/root:/Reports:/children":
            docs, nxt = corpus.listing(token, self.scope)
            return collection([drive_item_json(d, corpus) for d in docs], next_link(request, nxt))
        if m := re.fullmatch(rf"{re.escape(drive)}/root:/Reports:/search\(q='(.*)'\)", path):
            docs, nxt = corpus.search(m.group(1).replace("''", "'"), token)
            return collection([drive_item_json(d, corpus) for d in docs], next_link(request, nxt))
        if path == f"{drive}/root/delta":
            docs, gone, nxt, delta = corpus.delta(token)
            # a listing from the start names the folders too (after their files, as Graph
            # does not promise parents first)
            value = [drive_item_json(d, corpus, delta=True) for d in docs]
            value += folders_of(corpus) if token is None else []
            value += [
                {
                    "id": corpus.deleted_raw(i),
                    "deleted": {"state": "deleted"},
                    "parentReference": {"driveId": DRIVE},
                }
                for i in gone
            ]
            return collection(
                value,
                nxt and f"{GRAPH}{drive}/root/delta?$skiptoken={nxt}",
                delta and f"{GRAPH}{drive}/root/delta?token={delta}",
            )
        return graph_error(404, 404)
