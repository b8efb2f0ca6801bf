"""A test session's own PostgreSQL outlives a session killed before its end (a timeout, a
second ^C); the next session's ``embedded_pg`` stops and removes it, and leaves alone the
servers of sessions that still run or are starting (real servers, real processes)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from nyla.embedded import is_alive, stop_server
from nyla.testing.fixtures import _HOLDER, _SERVER_PREFIX, _stop_abandoned

from .test_embedded import _running

START = "import sys; from pathlib import Path; from nyla.embedded import start_embedded; "
START += "start_embedded(Path(sys.argv[1]))"


@pytest.fixture
def root() -> Path:
    # not pytest's tmp_path: a server's socket lives in its data directory, and a path
    # that long passes the length a Unix socket's name may have
    base = Path(tempfile.mkdtemp(prefix="nyla-sweep-"))
    try:
        yield base
    finally:
        for pgdata in base.glob("*/pgdata"):
            stop_server(pgdata, mode="immediate")
        shutil.rmtree(base, ignore_errors=True)


def test_a_killed_sessions_server_is_stopped_and_removed(root: Path) -> None:
    killed = root / f"{_SERVER_PREFIX}killed"
    killed.mkdir()
    # a process that starts the server and ends without stopping it, as a killed session
    started = subprocess.run(
        [sys.executable, "-c", f"import os; print(os.getpid()); {START}", str(killed)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert started.returncode == 0, started.stderr
    holder = int(started.stdout.split()[0])
    (killed / _HOLDER).write_text(str(holder))
    assert not is_alive(holder) and _running(killed / "pgdata")

    waiting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        running = root / f"{_SERVER_PREFIX}running"
        running.mkdir()
        (running / _HOLDER).write_text(str(waiting.pid))
        starting = root / f"{_SERVER_PREFIX}starting"  # no holder written yet
        starting.mkdir()
        other = root / "someone-else"
        other.mkdir()
        (other / _HOLDER).write_text(str(holder))

        _stop_abandoned(root)

        assert not _running(killed / "pgdata") and not killed.exists()
        assert running.exists() and starting.exists() and other.exists()
    finally:
        waiting.kill()
        waiting.wait()
