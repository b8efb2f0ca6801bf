"""The seeds' data-source, connection and RAG endpoints, files, knowledge search and the
catalog — over the API, on the embedded PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from sqlalchemy import select

from nyla.host import JobStore
from nyla_host.tables import HostRunRow  # noqa: F401  (tables registered)

pytestmark = pytest.mark.db


async def _source(client, headers, path="/docs", scope=None) -> tuple[str, str]:
    conn = await client.post(
        "/api/connections", json={"service": "memfs", "label": "Mem"}, headers=headers
    )
    assert conn.status_code == 201, conn.text
    body = {"connectionId": conn.json()["id"], "path": path, "label": "Docs"}
    if scope:
        body["scope"] = scope
    ds = await client.post("/api/datasources", json=body, headers=headers)
    assert ds.status_code == 201, ds.text
    return conn.json()["id"], ds.json()["id"]


async def _wait_jobs(state, headers, client) -> None:
    """Wait for the sync jobs this server runs (a job that failed raises here)."""
    for job in await JobStore(state.kernel.db).running():
        with contextlib.suppress(KeyError):  # already ended
            await asyncio.wait_for(state.kernel.jobs.wait(job.id), 30)
    jobs = (await client.get("/api/rag/inventory/jobs", headers=headers)).json()["jobs"]
    assert jobs == []


async def test_rag_toggle_on_syncs_and_off_purges(state, client, token_for, memory_plugin):
    headers = await token_for("alice")
    conn_id, ds_id = await _source(client, headers)
    memory_plugin.connector.gate = asyncio.Event()
    on = await client.patch(
        f"/api/datasources/{ds_id}/rag-index", json={"enabled": True}, headers=headers
    )
    assert on.status_code == 200 and on.json()["jobId"]
    assert on.json()["dataSource"]["ragIndexEffective"] is True
    running = (await client.get("/api/rag/inventory/jobs", headers=headers)).json()["jobs"]
    assert [j["id"] for j in running] == [on.json()["jobId"]]
    assert running[0]["dataSourceId"] == ds_id
    memory_plugin.connector.gate.set()
    await _wait_jobs(state, headers, client)
    inventory = (await client.get("/api/rag/inventory/me", headers=headers)).json()
    assert inventory["totals"]["files"] == 2 and inventory["totals"]["chunks"] >= 2
    assert inventory["partial"] == []
    found = (
        await client.get(
            "/api/knowledge/search", params={"q": "travel policy train"}, headers=headers
        )
    ).json()
    assert found["hits"][0]["fileName"] == "handbook.txt"
    tree = (await client.get(f"/api/connections/{conn_id}/tree", headers=headers)).json()
    assert tree["dataSources"][0]["lastIndexed"] is not None
    off = await client.patch(
        f"/api/datasources/{ds_id}/rag-index", json={"enabled": False}, headers=headers
    )
    assert off.json()["purge"]["files"] == 2 and off.json()["jobId"] is None
    inventory = (await client.get("/api/rag/inventory/me", headers=headers)).json()
    assert inventory["totals"]["files"] == 0


async def test_a_sync_stopped_at_a_limit_shows_as_partial(state, client, token_for):
    headers = await token_for("alice")
    _, ds_id = await _source(client, headers)
    limited = await client.patch(
        f"/api/datasources/{ds_id}/settings", json={"ragLimits": {"maxBytes": 70}}, headers=headers
    )
    assert limited.status_code == 200, limited.text
    await client.patch(
        f"/api/datasources/{ds_id}/rag-index", json={"enabled": True}, headers=headers
    )
    await _wait_jobs(state, headers, client)
    inventory = (await client.get("/api/rag/inventory/me", headers=headers)).json()
    assert [(p["dataSourceId"], p["label"]) for p in inventory["partial"]] == [(ds_id, "Docs")]
    assert inventory["totals"]["files"] == 1


async def test_settings_accept_only_rag_limits_and_move_the_estimate(state, client, token_for):
    headers = await token_for("alice")
    _, ds_id = await _source(client, headers)
    before = (await client.get(f"/api/datasources/{ds_id}/cost-estimate", headers=headers)).json()
    assert set(before) == {"estimatedTokens", "estimatedChf", "basis", "sourceId"}
    assert set(before["basis"]) == {"kind", "limits", "assumptions", "notes"}
    assert before["sourceId"] == ds_id
    bad = await client.patch(
        f"/api/datasources/{ds_id}/settings",
        json={"ragLimits": {"maxBytes": 1}, "colour": "red"},
        headers=headers,
    )
    assert bad.status_code == 400 and "colour" in bad.text
    unchanged = (await client.get(f"/api/datasources/{ds_id}", headers=headers)).json()
    assert unchanged["settings"] == {}
    assert before["basis"]["assumptions"]["sourceBytes"] == 125  # the two files, listed
    half = 70  # below what the source holds: the limit caps the estimate
    ok = await client.patch(
        f"/api/datasources/{ds_id}/settings",
        json={"ragLimits": {"maxBytes": half}},
        headers=headers,
    )
    assert ok.status_code == 200, ok.text
    after = (await client.get(f"/api/datasources/{ds_id}/cost-estimate", headers=headers)).json()
    assert after["estimatedTokens"] < before["estimatedTokens"]
    from nyla.testing.tables import KnowledgeAudit

    async with state.kernel.db.session() as s:
        actions = list((await s.execute(select(KnowledgeAudit.action))).scalars())
    assert "datasource_settings_changed" in actions


async def test_who_may_change_settings(client, token_for):
    owner = await token_for("alice", "user", "m1")
    _, personal = await _source(client, owner)
    _, shared = await _source(client, owner, path="/shared", scope="mandate")
    admin = await token_for("boss", "mandate-admin", "m1")
    other_admin = await token_for("boss2", "mandate-admin", "m2")
    patch = {"ragLimits": {"maxItems": 5}}
    url = "/api/datasources/{}/settings"
    assert (await client.patch(url.format(personal), json=patch, headers=admin)).status_code == 404
    assert (await client.patch(url.format(shared), json=patch, headers=admin)).status_code == 200
    denied = await client.patch(url.format(shared), json=patch, headers=other_admin)
    assert denied.status_code == 404
    stranger = await token_for("mallory")
    assert (
        await client.get(f"/api/datasources/{personal}/cost-estimate", headers=stranger)
    ).status_code == 404


async def test_consent_off_purges_and_stop_cancels(state, client, token_for, memory_plugin):
    headers = await token_for("alice")
    conn_id, ds_id = await _source(client, headers)
    await client.patch(
        f"/api/datasources/{ds_id}/rag-index", json={"enabled": True}, headers=headers
    )
    await _wait_jobs(state, headers, client)
    memory_plugin.connector.gate = asyncio.Event()  # the next sync hangs until stopped
    await client.patch(
        f"/api/datasources/{ds_id}/rag-index", json={"enabled": True}, headers=headers
    )
    stop = await client.post(f"/api/connections/{conn_id}/knowledge-stop", headers=headers)
    assert stop.json()["cancelledJobs"] == 1
    consent = await client.patch(
        f"/api/connections/{conn_id}/knowledge-consent", json={"enabled": False}, headers=headers
    )
    assert consent.status_code == 200 and consent.json()["purge"]["files"] == 2
    memory_plugin.connector.gate.set()
    listed = (await client.get("/api/connections", headers=headers)).json()["connections"]
    assert listed[0]["knowledgeIngestionEnabled"] is False
    again = await client.patch(
        f"/api/datasources/{ds_id}/rag-index", json={"enabled": True}, headers=headers
    )
    assert again.json()["jobId"] is None  # no consent, no sync
    removed = await client.delete(f"/api/connections/{conn_id}", headers=headers)
    assert removed.status_code == 200
    assert (await client.get("/api/connections", headers=headers)).json()["connections"] == []
    await _wait_jobs(state, headers, client)


async def test_unknown_service_and_foreign_connection(client, token_for):
    alice, bob = await token_for("alice"), await token_for("bob")
    bad = await client.post("/api/connections", json={"service": "nope"}, headers=alice)
    assert bad.status_code == 400 and "memfs" in bad.text
    conn_id, _ = await _source(client, alice)
    for method, path in [("PATCH", "knowledge-consent"), ("POST", "knowledge-stop")]:
        r = await client.request(
            method, f"/api/connections/{conn_id}/{path}", json={"enabled": False}, headers=bob
        )
        assert r.status_code == 404
    assert (await client.delete(f"/api/connections/{conn_id}", headers=bob)).status_code == 404


async def test_files_roundtrip(client, token_for):
    alice, bob = await token_for("alice"), await token_for("bob")
    up = await client.post(
        "/api/files", files={"file": ("ümlaut.txt", b"hello", "text/plain")}, headers=alice
    )
    assert up.status_code == 201, up.text
    file_id = up.json()["id"]
    listed = (await client.get("/api/files", headers=alice)).json()["files"]
    assert [f["id"] for f in listed] == [file_id]
    content = await client.get(f"/api/files/{file_id}/content", headers=alice)
    assert content.content == b"hello"
    assert (await client.get(f"/api/files/{file_id}", headers=bob)).status_code == 404
    assert (await client.delete(f"/api/files/{file_id}", headers=alice)).status_code == 200
    assert (await client.get(f"/api/files/{file_id}", headers=alice)).status_code == 404


async def test_catalog(client, token_for):
    headers = await token_for("alice")
    models = (await client.get("/api/models", headers=headers)).json()["models"]
    assert "scripted:model" in [m["id"] for m in models]
    toolboxes = (await client.get("/api/toolboxes", headers=headers)).json()["toolboxes"]
    core = next(t for t in toolboxes if t["id"] == "core")
    assert "listFiles" in core["tools"] and core["defaultActive"] is True
    schema = (await client.get("/api/openapi.json", headers=headers)).json()
    assert "/api/datasources/{data_source_id}/rag-index" in schema["paths"]


_IDP_TOKENS = {
    "access_token": "at-1",
    "refresh_token": "rt-1",
    "expires_in": 3600,
    "token_type": "Bearer",
}


async def test_oauth_sign_in_round_trip(db, make_kernel, provider, tmp_path, monkeypatch):
    from urllib.parse import parse_qs, urlparse

    import httpx

    from nyla import hookimpl
    from nyla.sdk.connectors import BaseConnector, OAuthConfig
    from nyla_host.app import add_page, bare_app, build_state, mount, shutdown, startup

    class Cloud(BaseConnector):
        service = "cloud"
        oauth = OAuthConfig(
            token_url="https://idp.test/token",
            authorize_url="https://idp.test/authorize",
            client_id_setting="NYLA_TEST_CLOUD_CLIENT",
            scopes=["files.read"],
        )

    class CloudPlugin:
        @hookimpl
        def nyla_connectors(self):
            return [Cloud()]

    exchanged = []

    def idp(request: httpx.Request) -> httpx.Response:
        form = parse_qs(request.content.decode())
        exchanged.append(form)
        return httpx.Response(200, json=_IDP_TOKENS)

    monkeypatch.setenv("NYLA_TEST_CLOUD_CLIENT", "client-42")
    kernel = make_kernel(
        provider,
        CloudPlugin(),
        db=db,
        settings={"transport": httpx.MockTransport(idp), "data_dir": tmp_path},
    )
    state = build_state(kernel)
    await startup(state)
    try:
        app = bare_app()
        mount(app, state)
        add_page(app)
        token, _ = await state.tokens.create("alice")
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://h"
        ) as client:
            started = (
                await client.post("/api/connections/oauth/cloud/start", headers=headers)
            ).json()
            query = parse_qs(urlparse(started["authorizeUrl"]).query)
            assert query["client_id"] == ["client-42"] and query["scope"] == ["files.read"]
            assert query["state"] == [started["state"]]
            callback = urlparse(query["redirect_uri"][0]).path
            assert callback == "/api/connections/oauth/cloud/callback"
            forged = await client.get(callback, params={"state": "forged", "code": "c"})
            assert forged.status_code == 303 and exchanged == []
            assert forged.headers["location"].startswith("/#sources?oauthError=")
            done = await client.get(callback, params={"state": started["state"], "code": "code-7"})
            assert done.status_code == 303, done.text
            assert exchanged[0]["code"] == ["code-7"] and exchanged[0]["grant_type"] == [
                "authorization_code"
            ]
            assert exchanged[0]["code_verifier"]  # PKCE (test_oauth_flow.py checks it end to end)
            connected = parse_qs(urlparse(done.headers["location"]).fragment.partition("?")[2])
            listed = (await client.get("/api/connections", headers=headers)).json()["connections"]
            assert [c["id"] for c in listed] == connected["connected"]
            assert "at-1" not in str(listed)  # tokens stay in the encrypted store
            again = await client.get(callback, params={"state": started["state"], "code": "code-7"})
            assert "oauthError=" in again.headers["location"]  # a state is used once
    finally:  # the host's scheduler and jobs must not outlive the test (the loop is shared)
        await shutdown(state)


async def test_an_upload_above_the_limit_is_refused(state, client, token_for):
    state.settings.max_upload_bytes = 100
    headers = await token_for("alice")
    big = await client.post("/api/files", files={"file": ("big.bin", b"x" * 101)}, headers=headers)
    assert big.status_code == 413
    assert (await client.get("/api/files", headers=headers)).json()["files"] == []
    nameless = await client.post("/api/files", files={"file": ("", b"x")}, headers=headers)
    assert nameless.status_code in (400, 422)


async def test_browse_shows_the_connectors_tree_with_effective_rag(client, token_for):
    headers = await token_for("alice")
    conn_id, ds_id = await _source(client, headers, path="/docs")
    root = (await client.get(f"/api/connections/{conn_id}/browse", headers=headers)).json()
    assert [(i["nodePath"], i["isFolder"]) for i in root["items"]] == [("/docs", True)]
    assert root["items"][0]["dataSourceId"] == ds_id
    assert root["items"][0]["ragIndexEffective"] is False
    await client.patch(
        f"/api/datasources/{ds_id}/rag-index", json={"enabled": True}, headers=headers
    )
    docs = (
        await client.get(
            f"/api/connections/{conn_id}/browse", params={"path": "/docs"}, headers=headers
        )
    ).json()
    names = [(i["title"], i["dataSourceId"], i["ragIndexEffective"]) for i in docs["items"]]
    assert names == [("handbook.txt", None, True), ("notes.txt", None, True)]  # inherited
    await client.patch(
        f"/api/connections/{conn_id}/knowledge-consent", json={"enabled": False}, headers=headers
    )
    docs = (
        await client.get(
            f"/api/connections/{conn_id}/browse", params={"path": "/docs"}, headers=headers
        )
    ).json()
    assert [i["ragIndexEffective"] for i in docs["items"]] == [False, False]  # no consent
    stranger = await token_for("mallory")
    assert (
        await client.get(f"/api/connections/{conn_id}/browse", headers=stranger)
    ).status_code == 404


def _download_name(disposition: str) -> str:
    """The name a browser saves a download under: ``filename*`` (RFC 8187) when present."""
    from urllib.parse import unquote

    for part in disposition.split(";"):
        key, _, value = part.strip().partition("=")
        if key == "filename*":
            charset, _, encoded = value.split("'", 2)
            assert charset == "UTF-8"
            return unquote(encoded, encoding="utf-8")
    return disposition.split('filename="', 1)[1].rsplit('"', 1)[0]


@pytest.mark.parametrize(
    ("name", "saved_as"),
    [
        ("Bericht €.txt", "Bericht €.txt"),
        ("日本語.txt", "日本語.txt"),
        ("Zürich.txt", "Zürich.txt"),
        ("plain.txt", "plain.txt"),
    ],
)
async def test_a_download_keeps_any_file_name(client, token_for, name, saved_as):
    alice = await token_for("alice")
    up = await client.post(
        "/api/files", files={"file": (name, b"hello", "text/plain")}, headers=alice
    )
    assert up.status_code == 201, up.text
    content = await client.get(f"/api/files/{up.json()['id']}/content", headers=alice)
    assert content.status_code == 200 and content.content == b"hello"
    disposition = content.headers["content-disposition"]
    assert disposition.isascii() and disposition.startswith("attachment;")
    assert _download_name(disposition) == saved_as
    assert content.headers["x-content-type-options"] == "nosniff"


async def test_a_stored_name_with_line_breaks_cannot_split_the_download_header(
    client, token_for, kernel
):
    from nyla_host.identity import Identity
    from nyla_host.routes.catalog import run_context

    alice = await token_for("alice")
    context = run_context(Identity(user_id="alice", mandate_id="m1"))
    # a name written by a tool or connector, not an upload
    item = await kernel.files.save('x\r\nSet-Cookie: "a=b".txt', b"hi", context)
    content = await client.get(f"/api/files/{item.id}/content", headers=alice)
    assert content.status_code == 200
    assert "set-cookie" not in content.headers
    assert _download_name(content.headers["content-disposition"]) == 'x Set-Cookie: "a=b".txt'


@pytest.mark.parametrize(
    ("stored", "saved_as"),
    [
        ("../../etc/passwd", "passwd"),
        ("..\\..\\Windows\\win.ini", "win.ini"),
        ("reports/2026/Q3 €.txt", "Q3 €.txt"),
        ("../", "download"),
    ],
)
async def test_a_download_is_offered_under_its_base_name_only(
    client, token_for, kernel, stored, saved_as
):
    from nyla_host.identity import Identity
    from nyla_host.routes.catalog import run_context

    alice = await token_for("alice")
    context = run_context(Identity(user_id="alice", mandate_id="m1"))
    item = await kernel.files.save(stored, b"hi", context)  # as a connector or tool names it
    content = await client.get(f"/api/files/{item.id}/content", headers=alice)
    assert content.status_code == 200
    disposition = content.headers["content-disposition"]
    assert _download_name(disposition) == saved_as
    assert "/" not in disposition.split(";", 1)[1] and "\\" not in disposition


async def test_an_upload_name_too_long_to_keep_is_the_caller_s_400(client, token_for):
    alice = await token_for("alice")
    up = await client.post("/api/files", files={"file": ("n" * 600 + ".txt", b"x")}, headers=alice)
    assert up.status_code == 400 and "at most 512" in up.json()["detail"]
    assert (await client.get("/api/files", headers=alice)).json()["files"] == []
