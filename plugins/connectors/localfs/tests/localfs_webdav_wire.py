"""A WebDAV server's wire format (RFC 4918 multistatus) over the contract suite's corpus."""

from __future__ import annotations

from email.utils import format_datetime
from urllib.parse import quote, unquote
from xml.sax.saxutils import escape

import httpx

from nyla.testing.fake_vendor import ConnectorWire, FakeCorpus, FakeDoc
from nyla_connector_localfs.webdav import WebDav

BASE = "https://dav.example.com/remote.php/dav/files/ada"
ROOT = "/remote.php/dav/files/ada"


def _response(href: str, props: str) -> str:
    return (
        f"<d:response><d:href>{escape(href)}</d:href><d:propstat><d:prop>{props}</d:prop>"
        "<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"
    )


def _file(doc: FakeDoc) -> str:
    props = (
        f"<d:displayname>{escape(doc.name)}</d:displayname>"
        f"<d:getcontentlength>{len(doc.content)}</d:getcontentlength>"
        f"<d:getcontenttype>{doc.mime}</d:getcontenttype>"
        f'<d:getetag>"{doc.etag}"</d:getetag>'
        f"<d:getlastmodified>{format_datetime(doc.modified, usegmt=True)}</d:getlastmodified>"
        "<d:resourcetype/>"
    )
    return _response(ROOT + quote(doc.path), props)


def _folder(path: str) -> str:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    props = f"<d:displayname>{escape(name)}</d:displayname><d:resourcetype><d:collection/></d:resourcetype>"
    return _response(ROOT + quote(path.rstrip("/") + "/"), props)


class WebDavWire(ConnectorWire):
    """Multistatus answers for PROPFIND, bytes for GET, 201 for PUT."""

    lists_by_folder = True

    def add_unlistable(self, corpus: FakeCorpus, name: str, content: str) -> FakeDoc:
        return corpus.add(name, content, "/sealed")

    def adapter(self) -> WebDav:
        return WebDav()

    def settings(self) -> dict:
        return {"baseUrl": BASE, "pageSize": 3}

    def grant(self):
        from nyla.sdk.connectors import TokenGrant

        return TokenGrant(access_token="ada:secret")

    def handle(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        if request.headers.get("authorization") != "Basic YWRhOnNlY3JldA==":
            return self.error_reply(401)
        path = "/" + unquote(request.url.path)[len(ROOT) :].strip("/")
        if request.method == "PROPFIND":
            return self._propfind(corpus, path, request.headers.get("depth", "1"))
        if request.method == "GET":
            doc = next((d for d in corpus.live() if d.path == path), None)
            if doc is None:
                return self.error_reply(404)
            return httpx.Response(200, content=doc.content, headers={"content-type": doc.mime})
        if request.method == "PUT":
            folder, _, name = path.rpartition("/")
            corpus.add(name, request.content, folder or "/")
            return httpx.Response(201)
        return self.error_reply(405)

    def _propfind(self, corpus: FakeCorpus, path: str, depth: str) -> httpx.Response:
        doc = next((d for d in corpus.live() if d.path == path), None)
        if doc is not None:
            body = [_file(doc)]
        else:
            prefix = path.rstrip("/") + "/"
            below = [d for d in corpus.listed() if d.path.startswith(prefix)]
            if not below and path != "/":
                return self.error_reply(404)
            body = [_folder(path)]
            if depth != "0":
                folders = sorted(
                    {
                        d.path[len(prefix) :].split("/")[0]
                        for d in below
                        if "/" in d.path[len(prefix) :]
                    }
                )
                body += [_folder(prefix + f) for f in folders]
                body += [_file(d) for d in below if "/" not in d.path[len(prefix) :]]
        xml = (
            '<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">'
            + "".join(body)
            + "</d:multistatus>"
        )
        return httpx.Response(
            207, content=xml.encode(), headers={"content-type": "application/xml"}
        )

    def item_id(self, doc: FakeDoc) -> str:
        return doc.path.strip("/")

    def search_term(self, doc: FakeDoc) -> str:
        return doc.name.rsplit(".", 1)[0]
