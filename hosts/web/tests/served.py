"""``nyla serve`` as a subprocess on 127.0.0.1 for the end-to-end tests: its own schema in the
test session's PostgreSQL, the demo model, the in-memory connector (``memfs``) and an embedding
model, a token per test."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import httpx
from cryptography.fernet import Fernet

import nyla_host.tables  # noqa: F401
from nyla.host import Database
from nyla_host.tokens import TokenStore

TESTS = Path(__file__).resolve().parent
NYLA = Path(sys.executable).with_name("nyla")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """One database schema and the server processes started on it."""

    def __init__(self, pg_url: str, tmp: Path) -> None:
        self.schema = f"e2e_{uuid.uuid4().hex[:10]}"
        self.pg_url = pg_url
        self.tmp = tmp
        self.release = tmp / "release-walk"
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.url = f"http://127.0.0.1:{self.port}"

    def database(self) -> Database:
        return Database(self.pg_url, schema=self.schema)

    async def prepare(self) -> str:
        """Create the schema with every table; return a token for ``alice``."""
        db = self.database()
        try:
            await db.ensure_ready()
            token, _ = await TokenStore(db).create("alice", role="sysadmin", name="e2e")
        finally:
            await db.dispose()
        return token

    def start(self, *, delay_s: float = 0.15) -> None:
        """Start ``nyla serve`` and wait until /healthz answers."""
        options = quote(f"-csearch_path={self.schema},public")
        env = {
            **os.environ,
            "NYLA_DATABASE_URL": f"{self.pg_url}{'&' if '?' in self.pg_url else '?'}options={options}",
            "NYLA_EMBEDDING_MODEL": "e2e:hash",
            "NYLA_DEMO_MODEL_DELAY": str(delay_s),
            "NYLA_E2E_RELEASE": str(self.release),
            "NYLA_SSE_PING_S": "0.2",
            "NYLA_SECRET_KEY": Fernet.generate_key().decode(),
            "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        }
        command = [str(NYLA), "serve", "--port", str(self.port), "--demo-model"]
        command += ["--plugin", "memfs:ServedPlugin"]
        log = open(self.tmp / f"serve-{time.monotonic_ns()}.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nyla serve exited: {Path(log.name).read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("nyla serve did not answer within 90 s")

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs (a crashed or killed server)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    async def drop(self) -> None:
        db = self.database()
        try:
            await db.drop_schema()
        finally:
            await db.dispose()


def run(coro):
    """Run a coroutine from synchronous test code."""
    return asyncio.run(coro)
