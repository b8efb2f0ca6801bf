"""Connecting a service from the page (issue 29): what ``GET /api/connectors`` tells a page,
settings checked against the connector's model, the probe that keeps a connection that
cannot list its root from being saved, a pasted token stored encrypted, and remove."""

from __future__ import annotations

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text

from nyla import hookimpl
from nyla.sdk.connectors import BaseConnector, Item, ItemPage

pytestmark = pytest.mark.db

GOOD_TOKEN = "pasted-tok-7f3a91c2"


class Pasted(BaseConnector):
    """A service that signs in with a pasted API token; its root lists only with a good one."""

    service = "pasted"
    label = "Pasted Service"
    base_url = "https://vendor.test/api"
    auth_modes = ("token",)

    async def browse(self, ctx, path: str = "", cursor: str | None = None) -> ItemPage:
        body = await ctx.http.get_json("/root")
        return ItemPage(items=[Item(id=i, title=i) for i in body["items"]])


class PastedPlugin:
    @hookimpl
    def nyla_connectors(self):
        return [Pasted()]


def vendor(request: httpx.Request) -> httpx.Response:
    if request.headers.get("Authorization") != f"Bearer {GOOD_TOKEN}":
        return httpx.Response(401, json={"error": "invalid token"})
    return httpx.Response(200, json={"items": ["a.txt"]})


@pytest.fixture
def kernel(db, make_kernel, provider, memory_plugin, tmp_path):
    """The host's kernel with the real local-folder connector and a token service."""
    localfs = pytest.importorskip("nyla_connector_localfs.plugin")
    return make_kernel(
        provider,
        memory_plugin,
        localfs,
        PastedPlugin(),
        db=db,
        settings={
            "knowledge": {"embedding_model": "scripted:model"},
            "data_dir": tmp_path,
            "secret_key": Fernet.generate_key(),
            "transport": httpx.MockTransport(vendor),
        },
    )


async def stored(state, table: str) -> int:
    async with state.kernel.db.session() as s:
        return int((await s.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one())


async def nothing_stored(state) -> None:
    assert await stored(state, "user_connection") == 0
    assert await stored(state, "connection_credential") == 0


async def test_connectors_say_what_a_page_needs(client, token_for):
    listed = (await client.get("/api/connectors", headers=await token_for("alice"))).json()
    by_service = {c["service"]: c for c in listed["connectors"]}
    localfs = by_service["localfs"]
    assert (localfs["label"], localfs["auth"], localfs["walker"]) == ("Local folder", "none", True)
    assert localfs["oauthConfigured"] is False and localfs["adminConsent"] is False
    [root] = localfs["fields"]
    assert root == {
        "key": "root",
        "label": "Folder",
        "kind": "folder",
        "required": True,
        "help": root["help"],
        "serverOnly": True,
        "default": None,
    }
    assert root["help"]
    assert localfs["settingsSchema"]["required"] == ["root"]
    assert localfs["settingsSchema"]["properties"]["root"]["kind"] == "folder"
    webdav = by_service["webdav"]
    assert [(f["key"], f["kind"], f["default"]) for f in webdav["fields"]] == [
        ("baseUrl", "url", None),
        ("pageSize", "number", 100),
    ]
    assert by_service["pasted"]["auth"] == "token"


async def test_a_local_folder_without_its_folder_is_refused(state, client, token_for):
    admin = await token_for("root-user", role="sysadmin", mandate=None)
    r = await client.post("/api/connections", json={"service": "localfs"}, headers=admin)
    assert r.status_code == 400, r.text
    assert r.json()["detail"] == "localfs: Folder (root) is required"
    await nothing_stored(state)


async def test_a_folder_that_does_not_exist_is_refused(state, client, token_for, tmp_path):
    admin = await token_for("root-user", role="sysadmin", mandate=None)
    missing = tmp_path / "nope"
    r = await client.post(
        "/api/connections",
        json={"service": "localfs", "settings": {"root": str(missing)}},
        headers=admin,
    )
    assert r.status_code == 400, r.text
    detail = r.json()["detail"]
    assert detail.startswith("Local folder: the connection was not saved"), detail
    assert "is not a folder" in detail and "\n" not in detail
    await nothing_stored(state)


async def test_a_probe_names_no_server_path_the_caller_did_not_give(
    state, client, token_for, tmp_path
):
    admin = await token_for("root-user", role="sysadmin", mandate=None)
    (tmp_path / "link").symlink_to(tmp_path / "gone")  # where it leads was not given
    r = await client.post(
        "/api/connections",
        json={"service": "localfs", "settings": {"root": str(tmp_path / "link")}},
        headers=admin,
    )
    assert r.status_code == 400, r.text
    assert str(tmp_path / "gone") not in r.text and "<server path>" in r.text
    await nothing_stored(state)


async def test_only_a_sysadmin_points_the_server_at_a_folder(state, client, token_for, tmp_path):
    alice = await token_for("alice")
    r = await client.post(
        "/api/connections",
        json={"service": "localfs", "settings": {"root": str(tmp_path)}},
        headers=alice,
    )
    assert r.status_code == 403, r.text
    assert "root" in r.json()["detail"] and "sysadmin" in r.json()["detail"]
    await nothing_stored(state)


async def test_unknown_services_and_settings_are_named(state, client, token_for, tmp_path):
    admin = await token_for("root-user", role="sysadmin", mandate=None)
    r = await client.post("/api/connections", json={"service": "dropbox"}, headers=admin)
    assert r.status_code == 400 and "unknown service 'dropbox'" in r.json()["detail"]
    assert "localfs" in r.json()["detail"]  # the installed ones are named
    r = await client.post(
        "/api/connections",
        json={"service": "localfs", "settings": {"root": str(tmp_path), "rot": "x"}},
        headers=admin,
    )
    assert r.status_code == 400, r.text
    assert r.json()["detail"] == "localfs: there is no setting 'rot' (its settings: root)"
    r = await client.post(
        "/api/connections",
        json={"service": "webdav", "settings": {"baseUrl": "https://dav.test/", "pageSize": 0}},
        headers=admin,
    )
    assert r.status_code == 400 and "Files per sync page (pageSize)" in r.json()["detail"]
    await nothing_stored(state)


async def test_a_local_folder_connects_lists_and_is_removed(state, client, token_for, tmp_path):
    admin = await token_for("root-user", role="sysadmin", mandate=None)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("hello")
    made = await client.post(
        "/api/connections",
        json={"service": "localfs", "settings": {"root": str(tmp_path / "docs")}},
        headers=admin,
    )
    assert made.status_code == 201, made.text
    connection = made.json()
    assert connection["label"] == "Local folder"
    assert connection["settings"] == {"root": str(tmp_path / "docs")}
    browsed = await client.get(f"/api/connections/{connection['id']}/browse", headers=admin)
    assert [i["title"] for i in browsed.json()["items"]] == ["a.txt"]
    removed = await client.delete(f"/api/connections/{connection['id']}", headers=admin)
    assert removed.status_code == 200 and removed.json()["removed"] == connection["id"]
    await nothing_stored(state)


async def test_a_pasted_token_is_probed_and_stored_encrypted(state, client, token_for):
    alice = await token_for("alice")
    refused = await client.post(
        "/api/connections", json={"service": "pasted", "token": "wrong"}, headers=alice
    )
    assert refused.status_code == 400, refused.text
    assert "not saved" in refused.json()["detail"]
    missing = await client.post("/api/connections", json={"service": "pasted"}, headers=alice)
    assert missing.status_code == 400 and "paste an API token" in missing.json()["detail"]
    await nothing_stored(state)
    made = await client.post(
        "/api/connections", json={"service": "pasted", "token": GOOD_TOKEN}, headers=alice
    )
    assert made.status_code == 201, made.text
    assert GOOD_TOKEN not in made.text
    async with state.kernel.db.session() as s:
        raw = (await s.execute(text("SELECT access_token FROM connection_credential"))).scalars()
        [ciphertext] = list(raw)
        grant = await state.kernel.connections.store.read_grant(s, made.json()["id"])
    assert GOOD_TOKEN not in ciphertext and grant is not None
    assert grant.access_token == GOOD_TOKEN
    # the stored token is the one the connection uses
    browsed = await client.get(f"/api/connections/{made.json()['id']}/browse", headers=alice)
    assert browsed.status_code == 200 and browsed.json()["items"][0]["title"] == "a.txt"
