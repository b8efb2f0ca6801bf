"""Hostile requests the held-out campaign of issue 27 sent (fault 7): each one is a 4xx with
a clear message — never a 500, a cut stream or a server path. A timezone header that is not a
zone is ignored (UTC), so no request, ``/healthz`` least of all, depends on it."""

from __future__ import annotations

import base64
import json
import os

import httpx
import pytest

from nyla.sdk.connectors import (
    ConnectorError,
    VendorForbiddenError,
    VendorNotFoundError,
    VendorRateLimitError,
)

from .conftest import wait_run
from .test_runs import parse_sse, start

pytestmark = pytest.mark.db


@pytest.fixture
def kernel(db, make_kernel, provider, memory_plugin, tmp_path):
    """The host's kernel with the real local-folder connector next to ``memfs``."""
    localfs = pytest.importorskip("nyla_connector_localfs.plugin")
    return make_kernel(
        provider,
        memory_plugin,
        localfs,
        db=db,
        settings={"knowledge": {"embedding_model": "scripted:model"}, "data_dir": tmp_path},
    )


def _clear_4xx(response: httpx.Response, *words: str) -> dict:
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    body = response.json()
    assert body["detail"], body  # text, or FastAPI's list of what failed validation where
    for word in words:
        assert word in json.dumps(body["detail"]), body
    for leak in ("Traceback", "psycopg", "sqlalchemy", "SELECT"):
        assert leak not in response.text, response.text
    return body


@pytest.mark.parametrize(
    "zone", ["America", "Etc", "America/Indiana", "zone.tab", "tzdata.zi", "Europe/", "a\x00b"]
)
async def test_a_timezone_header_that_is_no_zone_is_ignored_on_every_route(client, token_for, zone):
    hostile = {"X-User-Timezone": zone.encode()}
    health = await client.get("/healthz", headers=hostile)
    assert health.status_code == 200, health.text
    alice = await token_for("alice")
    me = await client.get("/api/me", headers={**alice, **hostile})
    assert me.status_code == 200, me.text
    assert me.json()["timezone"] == "UTC"
    runs = await client.get("/api/runs", headers={**alice, **hostile})
    assert runs.status_code == 200, runs.text
    fine = await client.get("/api/me", headers={**alice, "X-User-Timezone": "Europe/Zurich"})
    assert fine.json()["timezone"] == "Europe/Zurich"


@pytest.mark.parametrize(
    "value",
    ["²", "١٢", "5" * 5000, str(2**63), str(2**63 + 1), str(2**31), "-1", "1e3", "0x10", "9" * 11],
)
async def test_a_last_event_id_that_is_no_event_id_is_a_400(state, client, token_for, value):
    alice = await token_for("alice")
    run = await start(client, alice)
    await wait_run(state, run["runId"])
    # as a client sends it: the header's bytes are the value's UTF-8
    by_header = await client.get(
        run["eventsUrl"], headers={**alice, "Last-Event-ID": value.encode()}
    )
    _clear_4xx(by_header, "Last-Event-ID")
    assert by_header.status_code == 400
    by_query = await client.get(run["eventsUrl"], params={"lastEventId": value}, headers=alice)
    _clear_4xx(by_query, "Last-Event-ID")


async def test_every_valid_last_event_id_ends_the_stream_with_an_end_event(
    state, client, token_for
):
    alice = await token_for("alice")
    run = await start(client, alice)
    await wait_run(state, run["runId"])
    for value in ("", " 3 ", "0", str(2**31 - 1)):
        response = await client.get(run["eventsUrl"], headers={**alice, "Last-Event-ID": value})
        assert response.status_code == 200, (value, response.text)
        assert parse_sse(response.text)[-1]["event"] == "end", (value, response.text)


async def test_a_stream_whose_events_fail_half_way_still_ends(
    state, client, token_for, monkeypatch
):
    alice = await token_for("alice")
    run = await start(client, alice)
    await wait_run(state, run["runId"])
    original = state.runs.events

    async def failing(run_id, after, *, keepalive):
        async for event in original(run_id, after, keepalive=keepalive):
            yield event
            raise RuntimeError("/srv/secret connection lost")

    monkeypatch.setattr(state.runs, "events", failing)
    response = await client.get(run["eventsUrl"], headers=alice)
    messages = parse_sse(response.text)
    assert [m.get("event") for m in messages[-2:]] == ["error", "end"], response.text
    assert "correlation id" in messages[-2]["data"] and "/srv" not in response.text
    assert json.loads(messages[-1]["data"])["status"] == "completed"


@pytest.fixture
async def folder(state, client, token_for, tmp_path):
    """A local-folder connection (a sysadmin's: ``root`` is a server setting) over a folder
    with a file, a sub-folder and a dangling symlink; its id, headers and root."""
    root = tmp_path / "share"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha")
    admin = await token_for("root-user", role="sysadmin", mandate=None)
    created = await client.post(
        "/api/connections",
        json={"service": "localfs", "settings": {"root": str(root)}},
        headers=admin,
    )
    assert created.status_code == 201, created.text
    return created.json()["id"], admin, root


async def test_a_cursor_the_listing_never_gave_out_is_a_400(client, folder):
    connection_id, admin, _ = folder
    url = f"/api/connections/{connection_id}/browse"
    assert (await client.get(url, headers=admin)).status_code == 200
    for cursor in ("abc", "1" * 5000, "x" * 5000, "\x01"):
        r = await client.get(url, params={"cursor": cursor}, headers=admin)
        _clear_4xx(r, "cursor")


async def test_a_bytes_path_holding_a_nul_is_a_400(client, folder):
    connection_id, admin, _ = folder
    url = f"/api/connections/{connection_id}/browse"
    for raw in (b"\x00", b"sub\x00x", b"a\x00/../.."):
        path = "~bytes:" + base64.urlsafe_b64encode(raw).decode()
        _clear_4xx(await client.get(url, params={"path": path}, headers=admin))


async def test_local_folder_failures_are_4xx_naming_no_server_path(client, folder, tmp_path):
    connection_id, admin, root = folder
    os.symlink(root / "gone.txt", root / "dangling.txt")
    url = f"/api/connections/{connection_id}/browse"
    listed = await client.get(url, headers=admin)
    assert listed.status_code in (200, 502), listed.text  # left out, or the connector's 502
    outside = await client.get(url, params={"path": "../.."}, headers=admin)
    missing = await client.get(url, params={"path": "/nope/deeper"}, headers=admin)
    assert missing.status_code == 404 and "/nope/deeper" in missing.text, missing.text
    root.rename(tmp_path / "moved")
    gone = await client.get(url, headers=admin)
    assert gone.status_code == 404, gone.text
    for response in (outside, missing, gone, *([listed] if listed.status_code != 200 else [])):
        if response.status_code < 500:
            _clear_4xx(response)
        assert str(tmp_path) not in response.text, response.text
        assert response.json()["detail"].startswith("localfs"), response.text


async def test_any_failure_of_a_connector_is_answered_by_its_kind_without_server_paths(
    client, token_for, memory_plugin, monkeypatch
):
    alice = await token_for("alice")
    created = await client.post("/api/connections", json={"service": "memfs"}, headers=alice)
    url = f"/api/connections/{created.json()['id']}/browse"
    failures = [
        (FileNotFoundError(2, "No such file or directory", "/srv/secret/x.txt"), 502, "read"),
        (PermissionError(13, "Permission denied", "/srv/secret"), 502, "Permission denied"),
        (ValueError("invalid literal for int() with base 10: 'abc'"), 400, "cursor"),
        (KeyError("page"), 400, "cursor"),
        (VendorNotFoundError("memfs: /srv/secret/share is not a folder"), 404, "not a folder"),
        (VendorForbiddenError("memfs: may not read /srv/secret/share/x"), 403, "may not"),
        (VendorRateLimitError("memfs: slow down", retry_after=7.2), 429, "slow down"),
        (ConnectorError("memfs: file:///srv/secret/share broke"), 502, "broke"),
    ]
    for failure, status, says in failures:

        async def browse(self, ctx, path="", cursor=None, failure=failure):
            raise failure

        monkeypatch.setattr(type(memory_plugin.connector), "browse", browse)
        r = await client.get(url, params={"cursor": "abc"}, headers=alice)
        assert r.status_code == status, (failure, r.status_code, r.text)
        assert says in r.json()["detail"] and "/srv" not in r.text, (failure, r.text)
        assert r.json()["detail"].startswith("memfs"), r.text
        if status == 429:
            assert r.headers["retry-after"] == "7", r.headers
    assert r.json()["code"] == "connector_error"


async def test_control_characters_in_a_path_are_a_400(client, token_for):
    alice = await token_for("alice")
    for hostile in ("a%01b", "%1b%5b31m", "x%7f", "%c2%85"):
        r = await client.get(f"/api/files/{hostile}", headers=alice)
        _clear_4xx(r, "control character")
        assert r.status_code == 400


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
@pytest.mark.parametrize(
    ("body", "says"),
    [(b'{"prompt": "\xff\xfe"}', "UTF-8"), (b'{"prompt": "hi\\u0000"}', "NUL")],
)
async def test_the_input_guard_reads_every_body_whatever_its_content_type(
    client, token_for, content_type, body, says
):
    alice = await token_for("alice")
    headers = {**alice, **({"Content-Type": content_type} if content_type else {})}
    request = client.build_request("POST", "/api/runs", content=body, headers=headers)
    assert "Content-Type" not in request.headers or content_type
    r = await client.send(request)
    _clear_4xx(r, says)
    assert r.status_code == 400
    assert (await client.get("/api/runs", headers=alice)).json()["runs"] == []


async def test_an_unexpected_failure_carries_a_correlation_id_and_no_internals(
    app, token_for, caplog
):
    @app.get("/api/test-boom")
    async def boom() -> None:
        raise RuntimeError("/srv/secret/path SELECT secret FROM internals")

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://host.test") as c:
        r = await c.get("/api/test-boom")
    assert r.status_code == 500
    body = r.json()
    assert body["error"] == "InternalError"
    assert len(body["correlationId"]) >= 12
    assert body["correlationId"] in body["detail"]
    assert r.headers["x-correlation-id"] == body["correlationId"]
    assert "secret" not in r.text and "/srv" not in r.text
    assert any(body["correlationId"] in rec.getMessage() for rec in caplog.records)


async def test_no_database_connection_in_time_is_a_503_to_retry(app):
    from sqlalchemy.exc import TimeoutError as PoolTimeoutError

    @app.get("/api/test-busy")
    async def busy() -> None:
        raise PoolTimeoutError("QueuePool limit of size 5 overflow 10 reached")

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://host.test") as c:
        r = await c.get("/api/test-busy")
    assert r.status_code == 503 and r.headers["retry-after"] == "5"
    assert r.json()["error"] == "ServerBusy" and "retry" in r.json()["detail"]
    assert "QueuePool" not in r.text
    assert r.headers["x-frame-options"] == "DENY"  # answered inside the middleware


@pytest.mark.parametrize(
    ("limits", "says"),
    [
        ({"maxBytes": 10**23}, "at most"),
        ({"maxBytes": 1e23}, "whole number"),
        ({"maxItems": 2**63}, "at most"),
        ({"maxDepth": 10_000}, "at most"),
        ({"maxFileSize": 0}, "at least 1"),
        ({"maxItems": 5.0}, "whole number"),
        ({"maxItems": "5"}, "whole number"),
        ({"maxItems": True}, "whole number"),
    ],
)
async def test_rag_limits_out_of_their_range_are_a_400(client, token_for, limits, says):
    alice = await token_for("alice")
    connection = await client.post("/api/connections", json={"service": "memfs"}, headers=alice)
    source = await client.post(
        "/api/datasources",
        json={"connectionId": connection.json()["id"], "path": "/docs"},
        headers=alice,
    )
    url = f"/api/datasources/{source.json()['id']}"
    r = await client.patch(f"{url}/settings", json={"ragLimits": limits}, headers=alice)
    _clear_4xx(r, next(iter(limits)), says)
    shown = (await client.get(url, headers=alice)).json()
    assert shown["settings"] == {}
    key = next(iter(limits))
    low, high = shown["ragLimitRanges"][key]["min"], shown["ragLimitRanges"][key]["max"]
    assert low == 1 and shown["ragLimits"][key] <= high
    fine = await client.patch(f"{url}/settings", json={"ragLimits": {key: high}}, headers=alice)
    assert fine.status_code == 200, fine.text


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        ("localfs: /srv/share/x is not a folder", "localfs: <server path> is not a folder"),
        ("localfs: '/srv/share' gone", "localfs: '<server path>' gone"),
        ("read file:///srv/share/a.txt", "read <server path>"),
        ("kdrive: C:\\data\\share failed", "kdrive: <server path> failed"),
        ("graph: https://graph.microsoft.com/v1.0/me/drive 503", None),
        ("no folder '/docs/sub'", None),  # the caller's own path
        ("no folder '/docs'", None),
    ],
)
def test_server_paths_are_redacted_but_urls_and_the_caller_s_paths_are_not(message, shown):
    from nyla_host.connector_calls import redact_paths

    assert redact_paths(message, keep=["/docs/sub"]) == (shown or message)
    assert redact_paths("root /home/u/share/x", hidden=["/home/u/share"]) == "root <server path>/x"
