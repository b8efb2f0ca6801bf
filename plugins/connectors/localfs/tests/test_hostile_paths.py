"""Hostile ids, paths and names never leave the root: the WebDAV share (every request
recorded at the wire and checked) and the local folder (a real directory with real symlinks
pointing out of it)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from xml.sax.saxutils import escape

import httpx
import pytest

from nyla.sdk.connectors import ConnectorError, UnsafePathError
from nyla.testing.hostile_ids import (
    Hostile,
    WireContext,
    failures,
    http_check,
    probe_all,
    tally,
    wire_context,
)
from nyla_connector_localfs.local import LocalFolder
from nyla_connector_localfs.webdav import WebDav

BASE = "https://dav.example.com/remote.php/dav/files/ada"
ROOT = "/remote.php/dav/files/ada"
#: the operations a tool call can aim at a path: the hostile value fills the named argument
OPERATIONS = ["browse", "download", "item", "upload into", "upload as", "search in", "sync"]


def _entry(href: str, folder: bool) -> str:
    kind = "<d:collection/>" if folder else ""
    size = "" if folder else "<d:getcontentlength>5</d:getcontentlength>"
    return (
        f"<d:response><d:href>{href}</d:href><d:propstat><d:prop>"
        f"<d:displayname>{escape(unquote(href.rstrip('/').rsplit('/', 1)[-1]))}</d:displayname>"
        f"{size}<d:resourcetype>{kind}</d:resourcetype></d:prop>"
        "<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"
    )


def dav_server(request: httpx.Request) -> httpx.Response:
    """A WebDAV server (RFC 4918) that has whatever is asked for: a file at depth 0, a
    folder with one file at depth 1."""
    href = request.url.raw_path.decode("ascii")
    if request.method == "PUT":
        return httpx.Response(201)
    if request.method == "GET":
        return httpx.Response(200, content=b"hello")
    if request.headers.get("depth") == "1":
        body = _entry(href.rstrip("/") + "/", True) + _entry(href.rstrip("/") + "/f.txt", False)
    else:
        body = _entry(href, False)
    xml = f'<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">{body}</d:multistatus>'
    return httpx.Response(207, content=xml.encode(), headers={"content-type": "application/xml"})


async def _first_page(pages: Any) -> Any:
    async for page in pages:
        return page
    return None


def webdav_calls(ctx: WireContext) -> dict[str, Callable[[str], Awaitable[Any]]]:
    """Each WebDAV operation with the hostile value in the place a tool call fills."""
    dav = WebDav()
    return {
        "browse": lambda v: dav.browse(ctx, v),
        "download": lambda v: dav.download(ctx, v),
        "item": lambda v: dav.item(ctx, v),
        "upload into": lambda v: dav.upload(ctx, v, "a.txt", b"x", "text/plain"),
        "upload as": lambda v: dav.upload(ctx, "drafts", v, b"x", "text/plain"),
        "search in": lambda v: dav.search(ctx, "f", v),
        "sync": lambda v: _first_page(dav.sync(ctx, v, None)),
    }


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_webdav_never_leaves_the_share(operation: str) -> None:
    ctx = wire_context(
        "webdav", dav_server, base_url=BASE, settings={"baseUrl": BASE}, auth_scheme="Basic"
    )
    probes = await probe_all(webdav_calls(ctx)[operation], ctx.requests, http_check([BASE]))
    assert failures(probes) == [], tally(probes)
    assert all(r.url.path.startswith(ROOT + "/") or r.url.path == ROOT for r in ctx.requests)


async def test_webdav_still_reaches_real_names() -> None:
    ctx = wire_context("webdav", dav_server, base_url=BASE, settings={"baseUrl": BASE})
    dav = WebDav()
    await dav.download(ctx, "Reports 2026/Q3 (final) 100%.pdf")
    await dav.upload(ctx, "/drafts/", "résumé?.txt", b"x", "text/plain")
    paths = [r.url.raw_path.decode() for r in ctx.requests]
    assert paths[1] == ROOT + "/Reports%202026/Q3%20%28final%29%20100%25.pdf"
    assert ROOT + "/drafts/r%C3%A9sum%C3%A9%3F.txt" in paths


# ---- the local folder ----------------------------------------------------------------------


class Folder:
    """A root with files, a symlink to a folder outside, one to a file outside and a
    dangling one; a sibling ``outside`` folder holding the secrets."""

    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "root"
        self.outside = tmp / "outside"
        (self.root / "docs").mkdir(parents=True)
        self.outside.mkdir()
        (self.root / "docs" / "note.txt").write_text("inside")
        (self.root / "f.txt").write_text("inside too")
        for name in ("evil", "passwd", "secret.txt"):
            (self.outside / name).write_text("OUTSIDE")
            (tmp / name).write_text("OUTSIDE")
        os.symlink(self.outside, self.root / "link-out")
        os.symlink(self.outside / "secret.txt", self.root / "secret-link.txt")
        os.symlink(tmp / "gone", self.root / "dangling")

    def ctx(self) -> Any:
        return wire_context("localfs", lambda r: httpx.Response(500), settings=self.settings())

    def settings(self) -> dict[str, str]:
        return {"root": str(self.root)}

    def outside_files(self) -> set[Path]:
        """Every file outside the root (in the temp dir)."""
        return {p for p in self.root.parent.rglob("*") if self.root not in p.parents}


def local_calls(ctx: Any, leaks: list[str]) -> dict[str, Callable[[str], Awaitable[Any]]]:
    local = LocalFolder()

    async def download(v: str) -> None:
        got = await local.download(ctx, v)
        if b"OUTSIDE" in got.content:
            leaks.append(f"read {v!r} outside the root")

    async def browse(v: str) -> None:
        page = await local.browse(ctx, v)
        if any(i.title in ("evil", "passwd", "secret.txt") for i in page.items):
            leaks.append(f"listed outside the root for {v!r}")

    return {
        "browse": browse,
        "download": download,
        "item": lambda v: local.item(ctx, v),
        "upload into": lambda v: local.upload(ctx, v, "a.txt", b"x", "text/plain"),
        "upload as": lambda v: local.upload(ctx, "drafts", v, b"x", "text/plain"),
        "search in": lambda v: local.search(ctx, "inside", v),
        "sync": lambda v: _first_page(local.sync(ctx, v, None)),
    }


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_local_folder_never_leaves_its_root(operation: str, tmp_path: Path) -> None:
    folder = Folder(tmp_path)
    ctx = folder.ctx()
    leaks: list[str] = []
    before = folder.outside_files()

    def check(hostile: Hostile, requests: list[httpx.Request]) -> list[str]:
        created = folder.outside_files() - before
        found = leaks + [f"wrote {p}" for p in created]
        leaks.clear()
        return found

    probes = await probe_all(local_calls(ctx, leaks)[operation], ctx.requests, check)
    assert failures(probes) == [], tally(probes)


async def test_symlinks_out_of_the_root_are_neither_listed_nor_followed(tmp_path: Path) -> None:
    folder = Folder(tmp_path)
    ctx, local = folder.ctx(), LocalFolder()
    listed = {i.id for i in (await local.browse(ctx, "")).items}
    assert listed == {"docs", "f.txt"}
    for item_id in ("link-out/secret.txt", "secret-link.txt", "link-out", "dangling"):
        with pytest.raises(ConnectorError):
            await local.download(ctx, item_id)
    with pytest.raises(ConnectorError):
        await local.browse(ctx, "link-out")
    with pytest.raises(ConnectorError):
        await local.upload(ctx, "link-out", "planted.txt", b"x", "text/plain")
    with pytest.raises(ConnectorError):
        await local.upload(ctx, "", "secret-link.txt", b"overwritten", "text/plain")
    assert (folder.outside / "secret.txt").read_text() == "OUTSIDE"
    assert not (folder.outside / "planted.txt").exists()


async def test_a_hostile_bytes_id_is_a_typed_error(tmp_path: Path) -> None:
    import base64

    folder = Folder(tmp_path)
    ctx, local = folder.ctx(), LocalFolder()
    for raw in (b"evil\x00.txt", b"../evil", b"docs/../../evil"):
        item_id = "~bytes:" + base64.urlsafe_b64encode(raw).decode()
        with pytest.raises(UnsafePathError):
            await local.download(ctx, item_id)


# ---- through the tool layer ------------------------------------------------------------------


async def test_the_model_gets_a_structured_refusal(db, make_kernel, tmp_path: Path) -> None:
    from localfs_helpers import KEY

    import nyla_connector_localfs.plugin as localfs
    from nyla.testing import tool_context

    folder = Folder(tmp_path)
    kernel = make_kernel(localfs, db=db, settings={"secret_key": KEY})
    conn = await kernel.connections.add("localfs", user_id="u1", settings=folder.settings())
    tools = {t.name: t for t in kernel.plugins.toolboxes["datasources"].tools}
    ctx = tool_context(kernel, user="u1")

    async def call(name: str, **args: Any) -> Any:
        tool = tools[name]
        return await tool.handler(tool.args_model.model_validate(args), ctx)

    for name, args in [
        ("downloadFromDataSource", {"itemId": "../outside/secret.txt"}),
        ("downloadFromDataSource", {"itemId": "link-out/secret.txt"}),
        ("getDataSourceItem", {"itemId": "docs/%2e%2e/%2e%2e/evil"}),
        ("browseDataSource", {"path": "..\\..\\"}),
        ("searchDataSource", {"query": "x", "scope": "\uff0e\uff0e/outside"}),
    ]:
        result = await call(name, connectionId=conn.id, **args)
        assert not result.success and result.error_details.code == "UNSAFE_PATH", (name, result)
        assert str(tmp_path) not in (result.error or ""), "no server path in the answer"
