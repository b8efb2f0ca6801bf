"""An example connector and its wire, shaped like Microsoft Graph's drive API (driveItem
JSON, ``@odata.nextLink`` / ``@odata.deltaLink``, 410 on an expired delta token): the subject
the kernel's own tests run the connector contract on, and a template for vendor plugins."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx

from nyla.hookspecs import hookimpl
from nyla.sdk.connectors import (
    BaseConnector,
    BaseWalker,
    Download,
    HttpPolicy,
    Item,
    ItemPage,
    OAuthConfig,
    SyncPage,
)
from nyla.testing.fake_vendor import ConnectorWire, FakeCorpus, FakeDoc

API = "https://graph.example.com/v1.0"


def _item(raw: dict[str, Any]) -> Item:
    parent = raw.get("parentReference", {}).get("path", "/drive/root:")
    folder = parent.split("root:", 1)[-1] or "/"
    return Item(
        id=raw["id"],
        title=raw["name"],
        kind="folder" if "folder" in raw else "file",
        path=f"{folder.rstrip('/')}/{raw['name']}",
        url=raw.get("webUrl"),
        modified=datetime.fromisoformat(raw["lastModifiedDateTime"].replace("Z", "+00:00")),
        author=raw.get("createdBy", {}).get("user", {}).get("displayName"),
        size=raw.get("size"),
        mime=raw.get("file", {}).get("mimeType"),
        version=raw.get("eTag"),
    )


class ExampleDrive(BaseConnector):
    """A Graph-like drive: search, browse, download, delta sync, slim listing, OAuth."""

    service = "exampledrive"
    label = "Example Drive"
    query_syntax = "words matched against file names and text, e.g. `quarterly report`"
    base_url = API
    oauth = OAuthConfig(
        token_url="https://login.example.com/oauth2/v2.0/token",
        scopes=["Files.Read"],
        client_id_setting="EXAMPLE_CLIENT_ID",
    )
    http_policy = HttpPolicy(max_concurrency=4, rate_requests=100, rate_window_s=10)

    async def _page(self, ctx: Any, url: str, params: dict[str, str] | None = None) -> ItemPage:
        body = await ctx.http.get_json(url, params=params)
        return ItemPage(items=[_item(v) for v in body["value"]], cursor=body.get("@odata.nextLink"))

    async def search(self, ctx: Any, query: str, scope: str = "", cursor: str | None = None):
        if cursor:
            return await self._page(ctx, cursor)
        return await self._page(ctx, f"/drive/root/search(q='{quote(query)}')")

    async def browse(self, ctx: Any, path: str = "", cursor: str | None = None) -> ItemPage:
        if cursor:
            return await self._page(ctx, cursor)
        return await self._page(ctx, "/drive/root/children")

    async def download(self, ctx: Any, item_id: str, max_bytes: int | None = None) -> Download:
        meta = _item(await ctx.http.get_json(f"/drive/items/{item_id}"))
        data = await ctx.http.download(f"/drive/items/{item_id}/content", max_bytes=max_bytes)
        return Download(item=meta, content=data, mime=meta.mime or "application/octet-stream")

    async def sync(
        self, ctx: Any, scope: str, checkpoint: dict[str, Any] | None
    ) -> AsyncIterator[SyncPage]:
        url = (checkpoint or {}).get("link") or "/drive/root/delta"
        full = checkpoint is None or bool(checkpoint.get("full"))
        while True:
            body = await ctx.http.get_json(url)
            items = [_item(v) for v in body["value"] if "deleted" not in v]
            gone = [v["id"] for v in body["value"] if "deleted" in v]
            nxt, delta = body.get("@odata.nextLink"), body.get("@odata.deltaLink")
            link = nxt or delta
            yield SyncPage(
                items=items,
                tombstones=gone,
                checkpoint={"link": link, "full": bool(nxt) and full},
                done=nxt is None,
                full_listing=full,
            )
            if nxt is None:
                return
            url = nxt

    async def list_ids(self, ctx: Any, scope: str) -> AsyncIterator[list[str]]:
        url: str | None = "/drive/root/delta?$select=id"
        while url:
            body = await ctx.http.get_json(url)
            yield [v["id"] for v in body["value"] if "deleted" not in v]
            url = body.get("@odata.nextLink")


class ExampleWalker(BaseWalker):
    """Syncs the example drive (every file)."""

    id = "exampledrive"
    services = ["exampledrive"]


class ExampleDrivePlugin:
    """The plugin object (what an entry point would name)."""

    @hookimpl
    def nyla_connectors(self) -> list[Any]:
        return [ExampleDrive()]

    @hookimpl
    def nyla_walkers(self) -> list[Any]:
        return [ExampleWalker()]


def drive_item(doc: FakeDoc) -> dict[str, Any]:
    """A driveItem resource as Graph documents it."""
    return {
        "id": doc.id,
        "name": doc.name,
        "size": len(doc.content),
        "eTag": f'"{doc.etag}"',
        "lastModifiedDateTime": doc.modified.isoformat().replace("+00:00", "Z"),
        "webUrl": f"https://drive.example.com{doc.path}",
        "file": {"mimeType": doc.mime},
        "parentReference": {"path": f"/drive/root:{doc.folder.rstrip('/')}"},
        "createdBy": {"user": {"displayName": doc.author}},
    }


class ExampleDriveWire(ConnectorWire):
    """Graph-shaped answers over the fake corpus."""

    def adapter(self) -> ExampleDrive:
        return ExampleDrive()

    def handle(self, request: httpx.Request, corpus: FakeCorpus) -> httpx.Response:
        path = request.url.path.removeprefix("/v1.0")
        token = parse_qs(urlsplit(str(request.url)).query).get("token", [None])[0]
        if m := re.fullmatch(r"/drive/items/([^/]+)/content", path):
            doc = corpus.get(m.group(1))
            if doc is None:
                return self.error_reply(404)
            return httpx.Response(200, content=doc.content, headers={"content-type": doc.mime})
        if m := re.fullmatch(r"/drive/items/([^/]+)", path):
            doc = corpus.get(m.group(1))
            return httpx.Response(200, json=drive_item(doc)) if doc else self.error_reply(404)
        if path == "/drive/root/children":
            docs, nxt = corpus.listing(token)
            return self._collection(docs, nxt, path)
        if path.startswith("/drive/root/search"):
            query = re.search(r"q='([^']*)'", request.url.path).group(1)  # type: ignore[union-attr]
            docs, nxt = corpus.search(query, token)
            return self._collection(docs, nxt, request.url.path.removeprefix("/v1.0"))
        if path == "/drive/root/delta":
            docs, gone, nxt, delta = corpus.delta(token)
            value = [drive_item(d) for d in docs] + [{"id": i, "deleted": {}} for i in gone]
            body: dict[str, Any] = {"value": value}
            if nxt:
                body["@odata.nextLink"] = f"{API}/drive/root/delta?token={nxt}"
            else:
                body["@odata.deltaLink"] = f"{API}/drive/root/delta?token={delta}"
            return httpx.Response(200, json=body)
        return self.error_reply(404)

    def _collection(self, docs: list[FakeDoc], nxt: str | None, path: str) -> httpx.Response:
        body: dict[str, Any] = {"value": [drive_item(d) for d in docs]}
        if nxt:
            body["@odata.nextLink"] = f"{API}{path}?token={nxt}"
        return httpx.Response(200, json=body)
