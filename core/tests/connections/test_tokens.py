"""Token storage and refresh on the embedded PostgreSQL: encrypted at rest, refreshed once
under the credential's advisory lock even when two processes race, re-consent on
invalid_grant."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text

from nyla.connections.crypto import TokenCipher
from nyla.connections.errors import NeedsReconsentError
from nyla.connections.service import ConnectionService
from nyla.errors import ConfigurationError
from nyla.kernel import Kernel
from nyla.knowledge.consent import purge_connection
from nyla.models.datasource import TokenGrant
from nyla.plugins import PluginHost

from .example_drive import ExampleDrivePlugin

KEY = Fernet.generate_key().decode()


def _service(db, handler, key: str = KEY) -> ConnectionService:
    host = PluginHost.from_plugins([ExampleDrivePlugin()], names=["example"])
    kernel = Kernel(plugins=host, db=db, settings={"secret_key": key})
    return ConnectionService(
        kernel.db,
        kernel.plugins,
        purge_index=purge_connection,
        settings=kernel.settings,
        transport=httpx.MockTransport(handler),
    )


def _grant(minutes: float) -> TokenGrant:
    return TokenGrant(
        access_token="access-1",
        refresh_token="refresh-1",
        expires_at=datetime.now(UTC) + timedelta(minutes=minutes),
    )


@pytest.fixture(autouse=True)
def _client_id(monkeypatch) -> None:
    monkeypatch.setenv("EXAMPLE_CLIENT_ID", "client-123")


async def test_tokens_are_encrypted_at_rest_and_need_the_key(db) -> None:
    service = _service(db, lambda r: httpx.Response(500))
    conn = await service.add("exampledrive", user_id="u1", grant=_grant(60))
    async with db.session() as s:
        raw = (
            await s.execute(text("SELECT access_token, refresh_token FROM connection_credential"))
        ).one()
    assert "access-1" not in raw[0] and "refresh-1" not in raw[1]
    assert await service.tokens.access_token(conn.id) == "access-1"
    other = _service(db, lambda r: httpx.Response(500), key=Fernet.generate_key().decode())
    with pytest.raises(ConfigurationError, match="cannot be decrypted"):
        await other.tokens.access_token(conn.id)


def test_a_bad_key_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="not a valid Fernet key"):
        TokenCipher(["not-a-key"])


async def test_refresh_ahead_of_expiry_saves_the_rotated_refresh_token(db) -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.content.decode())
        return httpx.Response(
            200, json={"access_token": "access-2", "refresh_token": "refresh-2", "expires_in": 3600}
        )

    service = _service(db, handler)
    conn = await service.add("exampledrive", user_id="u1", grant=_grant(2))  # inside 5 min
    assert await service.tokens.access_token(conn.id) == "access-2"
    assert await service.tokens.access_token(conn.id) == "access-2"
    assert len(calls) == 1 and "refresh_token=refresh-1" in calls[0]
    assert "client_id=client-123" in calls[0]
    async with db.session() as s:
        grant = await service.store.read_grant(s, conn.id)
    assert grant.refresh_token == "refresh-2"


async def test_concurrent_refreshes_in_one_process_ask_the_vendor_once(db) -> None:
    calls: list[int] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        await asyncio.sleep(0.05)
        return httpx.Response(200, json={"access_token": "access-2", "expires_in": 3600})

    service = _service(db, handler)
    conn = await service.add("exampledrive", user_id="u1", grant=_grant(-1))
    tokens = await asyncio.gather(*(service.tokens.access_token(conn.id) for _ in range(5)))
    assert tokens == ["access-2"] * 5 and len(calls) == 1
    async with db.session() as s:
        grant = await service.store.read_grant(s, conn.id)
    assert grant.refresh_token == "refresh-1", "an unrotated refresh token is kept"


async def test_invalid_grant_marks_needs_reconsent_and_is_not_retried(db) -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(400, json={"error": "invalid_grant", "error_description": "revoked"})

    service = _service(db, handler)
    conn = await service.add("exampledrive", user_id="u1", grant=_grant(-1))
    with pytest.raises(NeedsReconsentError):
        await service.tokens.access_token(conn.id)
    assert len(calls) == 1
    assert (await service.get(conn.id, user_id="u1")).status == "needs_reconsent"
    await service.reconsent(conn.id, _grant(60), user_id="u1")
    assert (await service.get(conn.id, user_id="u1")).status == "active"


async def test_two_processes_refresh_the_same_credential_once(db, tmp_path: Path) -> None:
    service = _service(db, lambda r: httpx.Response(500))
    conn = await service.add("exampledrive", user_id="u1", grant=_grant(-1))
    log, go = tmp_path / "refreshes.log", tmp_path / "go"
    log.touch()
    worker = Path(__file__).with_name("refresh_worker.py")
    env = {**os.environ, "EXAMPLE_CLIENT_ID": "client-123"}
    args = [sys.executable, str(worker), db.url, db.schema, KEY, conn.id, str(log), str(go)]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, env=env, text=True) for _ in range(2)]
    await asyncio.sleep(1.0)  # both processes up and waiting (correctness does not depend on it)
    go.touch()
    outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert log.read_text().count("grant_type=refresh_token") == 1, "the vendor was asked twice"
    assert outputs == ["access-2", "access-2"], outputs
    assert await service.tokens.access_token(conn.id) == "access-2"


async def test_connections_belong_to_their_user(db) -> None:
    from nyla.knowledge.consent import NotFoundError, PermissionDeniedError

    service = _service(db, lambda r: httpx.Response(500))
    conn = await service.add("exampledrive", user_id="u1", grant=_grant(60))
    with pytest.raises(PermissionDeniedError):
        await service.get(conn.id, user_id="u2")
    with pytest.raises(PermissionDeniedError):
        await service.remove(conn.id, user_id="u2")
    with pytest.raises(NotFoundError, match="no connector for service 'nope'"):
        await service.add("nope", user_id="u1")
    assert [c.id for c in await service.list("u1")] == [conn.id]
    assert await service.list("u2") == []
    await service.remove(conn.id, user_id="u1")
    assert await service.list("u1") == []
