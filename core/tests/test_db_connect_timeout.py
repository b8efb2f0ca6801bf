"""A database that accepts the connection and never answers fails within the connect
timeout with a clear error, instead of hanging the caller."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from nyla.db import Database, connect_timeout_s
from nyla.errors import DatabaseUnavailableError


@pytest.fixture
def silent_server():
    """A TCP server that accepts connections and never sends a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    server.close()


def test_the_connect_timeout_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("NYLA_DB_CONNECT_TIMEOUT_S", "7")
    assert connect_timeout_s() == 7
    monkeypatch.setenv("NYLA_DB_CONNECT_TIMEOUT_S", "0.5")
    assert connect_timeout_s() == 2  # libpq's minimum
    monkeypatch.setenv("NYLA_DB_CONNECT_TIMEOUT_S", "soon")
    assert connect_timeout_s() == 10


async def test_a_silent_server_fails_within_the_timeout(monkeypatch, silent_server):
    monkeypatch.setenv("NYLA_DB_CONNECT_TIMEOUT_S", "2")
    db = Database(f"postgresql://u:secret@127.0.0.1:{silent_server}/nyla")
    started = time.monotonic()
    try:
        with pytest.raises(DatabaseUnavailableError) as caught:
            await asyncio.wait_for(db.ensure_ready(), timeout=60)
    finally:
        await db.engine.dispose()
    assert time.monotonic() - started < 30  # bounded by the timeout, not the OS default
    assert "cannot reach the database" in str(caught.value)
    assert "secret" not in str(caught.value)
