"""Two hosts and two workers on one database (issue 37's done-when test): runs started
through host A run on the workers and are streamed through host B (and through host A until
it is killed, then resumed on B with Last-Event-ID); host A and one worker are killed with
SIGKILL mid-run. Every client must see every event of its run exactly once, in order, and
every run must end in a documented state: ``completed`` on the surviving worker,
``interrupted`` (never run again) on the killed one, ``cancelled`` for the run cancelled
through the other host."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select

import nyla_host.tables  # noqa: F401
from nyla.host import Database, Kernel
from nyla_host.tables import HostRunEventRow, HostRunRow
from nyla_host.tokens import TokenStore

from .served import NYLA, TESTS, free_port

pytestmark = pytest.mark.db

RUNS = 6
STEPS = 8


class Fleet:
    """The processes of one test on one schema."""

    def __init__(self, pg_url: str, tmp: Path) -> None:
        self.schema = f"so_{uuid.uuid4().hex[:10]}"
        self.pg_url, self.tmp = pg_url, tmp
        self.procs: dict[str, subprocess.Popen] = {}
        self.ports: dict[str, int] = {}
        self.env = {
            **os.environ,
            "NYLA_DATABASE_URL": pg_url,
            "NYLA_DATABASE_SCHEMA": self.schema,
            "NYLA_JOBS": "procrastinate",
            "NYLA_SECRET_KEY": Fernet.generate_key().decode(),
            "NYLA_HOME": str(tmp / "home"),
            "NYLA_ROUNDS_DELAY": "0.08",
            "NYLA_RUN_SWEEP_S": "1",
            "NYLA_RUN_HEARTBEAT_S": "1",
            "NYLA_SSE_PING_S": "0.5",
            "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        }

    def database(self) -> Database:
        return Database(self.pg_url, schema=self.schema)

    async def prepare(self) -> str:
        """Tables and the queue's tables made once (not raced by four processes); a token."""
        db = self.database()
        kernel = Kernel(db=db, settings={"jobs": "procrastinate"})
        try:
            await db.ensure_ready()
            await kernel.jobs._open()
            token, _ = await TokenStore(db).create("alice", role="user", mandate_id="m1")
        finally:
            await kernel.aclose()
        return token

    def _spawn(self, name: str, command: list[str]) -> None:
        log = open(self.tmp / f"{name}.log", "w")  # noqa: SIM115
        self.procs[name] = subprocess.Popen(
            command, env=self.env, stdout=log, stderr=subprocess.STDOUT
        )

    def serve(self, name: str) -> None:
        self.ports[name] = free_port()
        command = [str(NYLA), "serve", "--port", str(self.ports[name])]
        self._spawn(name, [*command, "--plugin", "rounds_model:RoundsPlugin"])

    def work(self, name: str) -> None:
        command = [sys.executable, "-c", "from nyla.cli import main; main()", "worker"]
        command += ["--concurrency", str(RUNS // 2), "--plugin", "rounds_model:RoundsPlugin"]
        self._spawn(name, command)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"

    async def ready(self, db: Database, seconds: float = 90) -> None:
        """Until both hosts answer and both workers are registered with the queue."""
        deadline = time.monotonic() + seconds
        async with httpx.AsyncClient(timeout=2) as client:
            for name in self.ports:
                while True:
                    self._alive(name)
                    try:
                        if (await client.get(f"{self.url(name)}/healthz")).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    assert time.monotonic() < deadline, f"{name} did not start"
                    await asyncio.sleep(0.2)
        from sqlalchemy import text

        while True:
            async with db.session() as s:
                found = (
                    await s.execute(text("SELECT count(*) FROM procrastinate_workers"))
                ).scalar()
            if found >= 2:
                return
            for name in self.procs:
                self._alive(name)
            assert time.monotonic() < deadline, "the workers did not register"
            await asyncio.sleep(0.2)

    def _alive(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {(self.tmp / f'{name}.log').read_text()[-3000:]}")

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for name, proc in self.procs.items():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill(name)


class Client:
    """One SSE client of one run: streams from ``hosts`` in turn (the next one when a host
    goes away), resuming with Last-Event-ID; records every event it got."""

    def __init__(self, run_id: str, hosts: list[str], headers: dict[str, str]) -> None:
        self.run_id, self.hosts, self.headers = run_id, hosts, headers
        self.seqs: list[int] = []
        self.types: list[str] = []
        self.end: dict | None = None
        self.resumed = 0

    async def follow(self, deadline: float) -> None:
        host = 0
        async with httpx.AsyncClient(timeout=httpx.Timeout(10, read=15)) as client:
            while self.end is None:
                assert time.monotonic() < deadline, f"run {self.run_id} did not end"
                headers = dict(self.headers)
                if self.seqs:
                    headers["Last-Event-ID"] = str(self.seqs[-1])
                url = f"{self.hosts[host]}/api/runs/{self.run_id}/events"
                try:
                    async with client.stream("GET", url, headers=headers) as response:
                        assert response.status_code == 200, await response.aread()
                        await self._read(response)
                except (httpx.TransportError, httpx.RemoteProtocolError):
                    host = min(host + 1, len(self.hosts) - 1)
                    self.resumed += 1
                    await asyncio.sleep(0.2)

    async def _read(self, response: httpx.Response) -> None:
        message: dict[str, str] = {}
        async for line in response.aiter_lines():
            if line:
                key, _, value = line.partition(": ")
                message[key] = value
                continue
            if message.get("event") == "end":
                self.end = json.loads(message["data"])
                return
            if "id" in message and "data" in message:
                self.seqs.append(int(message["id"]))
                self.types.append(message["event"])
            message = {}


async def _start(client: httpx.AsyncClient, host: str, headers: dict, prompt: str) -> str:
    body = {"prompt": prompt, "maxRounds": 30}
    response = await client.post(f"{host}/api/runs", json=body, headers=headers)
    assert response.status_code == 202, response.text
    return response.json()["runId"]


async def test_two_hosts_two_workers_nothing_lost_when_one_of_each_dies(embedded_pg, tmp_path):
    fleet = Fleet(embedded_pg, tmp_path)
    token = await fleet.prepare()
    headers = {"Authorization": f"Bearer {token}"}
    db = fleet.database()
    for name in ("a", "b"):
        fleet.serve(name)
    for name in ("w1", "w2"):
        fleet.work(name)
    try:
        await fleet.ready(db)
        a, b = fleet.url("a"), fleet.url("b")
        deadline = time.monotonic() + 45
        async with httpx.AsyncClient(timeout=10) as http:
            # cancel from the other host: started through A, cancelled through B
            doomed = await _start(http, a, headers, "steps=40 please")
            watcher = Client(doomed, [b], headers)
            watching = asyncio.create_task(watcher.follow(deadline))
            while len(watcher.seqs) < 2:
                await asyncio.sleep(0.05)
            cancelled = await http.post(f"{b}/api/runs/{doomed}/cancel", headers=headers)
            assert cancelled.json()["cancelled"] is True
            await asyncio.wait_for(watching, 20)
            assert watcher.end["status"] == "cancelled", watcher.end
            # the runs: started through A, streamed through B, and through A then B
            prompts = [f"steps={STEPS} {'write' if i % 2 else ''}" for i in range(RUNS)]
            run_ids = [await _start(http, a, headers, p) for p in prompts]
        clients = [Client(r, [b], headers) for r in run_ids]
        clients += [Client(r, [a, b], headers) for r in run_ids]
        following = [asyncio.create_task(c.follow(deadline)) for c in clients]
        while not all(len(c.seqs) >= 4 for c in clients):  # every run is under way
            assert time.monotonic() < deadline, [len(c.seqs) for c in clients]
            await asyncio.sleep(0.05)
        fleet.kill("a")
        fleet.kill("w1")
        killed_worker = f":{fleet.procs['w1'].pid}"
        await asyncio.wait_for(asyncio.gather(*following), max(1.0, deadline - time.monotonic()))
    finally:
        fleet.stop_all()
    async with db.session() as s:
        rows = {r.run_id: r for r in (await s.execute(select(HostRunRow))).scalars()}
        stored = {
            run_id: [
                (e.seq, e.type)
                for e in (
                    await s.execute(
                        select(HostRunEventRow)
                        .where(HostRunEventRow.run_id == run_id)
                        .order_by(HostRunEventRow.seq)
                    )
                ).scalars()
            ]
            for run_id in rows
        }
    await db.drop_schema()
    await db.dispose()
    assert rows[doomed].status == "cancelled"
    for client in clients:
        row = rows[client.run_id]
        events = stored[client.run_id]
        assert [seq for seq, _ in events] == list(range(1, row.last_seq + 1))
        assert client.seqs == [seq for seq, _ in events], "a gap or a duplicate"
        assert client.types == [kind for _, kind in events]
        assert client.end["status"] == row.status and client.end["lastEventId"] == row.last_seq
    statuses = {run_id: rows[run_id].status for run_id in run_ids}
    on_killed = {r for r in run_ids if rows[r].worker and rows[r].worker.endswith(killed_worker)}
    assert on_killed and len(on_killed) < RUNS, {r: rows[r].worker for r in run_ids}
    for run_id in run_ids:
        last_type = stored[run_id][-1][1]
        if run_id in on_killed:
            assert statuses[run_id] == "interrupted" and last_type == "ERROR", statuses
        else:
            assert statuses[run_id] == "completed" and last_type == "AGENT_SUMMARY", statuses
            assert sum(1 for _, kind in stored[run_id] if kind == "TOOL_RESULT") == STEPS
    assert all(c.resumed >= 1 for c in clients if c.hosts[0] == a), "A's clients moved to B"
