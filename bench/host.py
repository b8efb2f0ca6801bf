"""Host benchmark: ``nyla serve`` beside a bare FastAPI app doing the same database work, under
the same HTTP load from a load generator on a core of its own, as ratios.

The two servers (one uvicorn process each, the same settings: h11, asyncio loop, keep-alive
30 s, log level warning) are pinned to one core (``--server-cpu``, default the first this
process may use), the load generator (``bench/host_load.py``, one process of raw HTTP/1.1
keep-alive clients) to another (``--client-cpu``, default the last): the client gets a fixed
share, one core, that the server cannot take, and its CPU per request is printed so a
client-bound window shows. PostgreSQL is not pinned (the embedded server is shared); the
backends of each side are found by ``application_name`` and their CPU polled (a lower bound).

The reference (``bench/host_bare.py``, imports no nyla) serves the same routes over the same
PostgreSQL schema and tables, with the same driver (psycopg 3, async) written directly, and
the same verified-token cache as nyla (its TTL is read from ``nyla_host.tokens``; 0 = a token
query every request, on both sides). Scenarios, at every ``--clients`` level (default 50 and
200), each in ``--rounds`` rounds (default 3), the servers alternating in each round as
A B B A (nyla first in odd rounds, bare first in even ones: every side is measured as often
early as late, so a machine whose other load rises or falls during a round does not favour
either):

- ``me``: ``GET /api/me`` with a bearer API token (the auth check, a light JSON answer);
- ``runs``: ``GET /api/runs``, the caller's 50 latest runs (auth + one query of 50 rows);
- ``sse``: ``POST /api/runs``, then its ``eventsUrl`` to the ``end`` message. nyla runs the
  agent with the scripted ``demo:echo`` model (word delay ``--word-delay``, default 0): a
  FIXTURE, so the figures are the host's and the kernel's cost of a run, not a model's; the
  bare app records the run and replays the events captured from one nyla run. Time to first
  event (TTFE) runs from sending the POST to the first ``data:`` line.

A window: the clients start over ``--ramp`` seconds (default 1), start requests for
``--seconds`` (default 4) and finish the ones in flight; requests/s = completed requests / time
from the first start to the last response. CPU seconds (user + system, from /proc through
psutil) over the same time: the server process, its PostgreSQL backends and the load
generator. The goal (issue 32): nyla's requests/s ≥ 0.7× the bare app's at 50 and 200 clients.

    .venv/bin/python bench/host.py [--clients 50 200] [--seconds 4] [--rounds 3]
        [--scenario me runs sse] [--json results.json | --json -]

``--scale-out`` measures something else (``bench/host_scale.py``): one ``nyla serve`` beside
two hosts and two workers (``NYLA_JOBS=procrastinate``), 200 clients streaming runs, runs/s,
TTFE p50/p95 and events lost.

It uses its own schema in the embedded PostgreSQL (dropped afterwards). Never in the tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NYLA = Path(sys.executable).with_name("nyla")
SIDES = ("nyla", "bare")
SCENARIOS = ("me", "runs", "sse")
LABELS = {"me": "GET /api/me", "runs": "GET /api/runs", "sse": "run + SSE*"}
USER = "bench"
HEADERS = {"X-User-Timezone": "Europe/Zurich"}
#: finished runs seeded for the bench user: ``GET /api/runs`` lists 50 on both sides
SEEDED_RUNS = 50
GOAL = 0.7
#: seconds between two readings of the PostgreSQL backends
POLL_S = 0.1


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of ``values`` (seconds) in milliseconds."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def pinned(cpu: int) -> Any:
    """A ``preexec_fn`` that pins the child to ``cpu``."""
    return lambda: os.sched_setaffinity(0, {cpu})


# ---- the servers and their CPU ------------------------------------------------------------


def wait_healthy(proc: subprocess.Popen[bytes], port: int, log: Path, what: str) -> None:
    import httpx

    for _ in range(600):
        if proc.poll() is not None:
            sys.exit(f"{what} exited:\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    sys.exit(f"{what} did not start; its log: {log}")


def start_nyla(url: str, schema: str, port: int, args: argparse.Namespace, log: Path) -> Any:
    env = {
        **os.environ,
        "NYLA_DATABASE_URL": url,
        "NYLA_DATABASE_SCHEMA": schema,
        "NYLA_DEMO_MODEL_DELAY": str(args.word_delay),
    }
    env.pop("NYLA_LOCAL_EMBEDDINGS", None)
    argv = [str(NYLA), "serve", "--demo-model", "--port", str(port), "--log-level", "warning"]
    out = log.open("w")
    proc = subprocess.Popen(
        argv, env=env, stdout=out, stderr=subprocess.STDOUT, preexec_fn=pinned(args.server_cpu)
    )
    wait_healthy(proc, port, log, "nyla serve")
    return proc


def start_bare(port: int, spec: Path, args: argparse.Namespace, log: Path) -> Any:
    argv = [sys.executable, str(HERE / "host_bare.py"), str(port), str(spec)]
    out = log.open("w")
    proc = subprocess.Popen(
        argv, stdout=out, stderr=subprocess.STDOUT, preexec_fn=pinned(args.server_cpu)
    )
    wait_healthy(proc, port, log, "the bare app")
    return proc


class CpuMeter:
    """CPU seconds (user + system) of a server and of its PostgreSQL backends, which are
    polled every :data:`POLL_S` (a pool may open and close some under load; one that lived
    less than that is missed, so the PostgreSQL figure is a lower bound)."""

    def __init__(self, server: int, pg: Any, app_name: str) -> None:
        self.server, self.pg, self.app_name = server, pg, app_name
        self.backends: dict[int, float] = {}
        self.stop = threading.Event()
        self._poll_once()
        self.poller = threading.Thread(target=self._poll, daemon=True)
        self.poller.start()

    @staticmethod
    def _cpu(pid: int) -> float | None:
        import psutil

        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            return None
        return float(times.user + times.system)

    def _poll_once(self) -> None:
        query = "SELECT pid FROM pg_stat_activity WHERE application_name = %s"
        for (pid,) in self.pg.execute(query, (self.app_name,)).fetchall():
            cpu = self._cpu(pid)
            if cpu is not None:
                self.backends[pid] = cpu

    def _poll(self) -> None:
        while not self.stop.wait(POLL_S):
            self._poll_once()

    def snapshot(self) -> dict[str, Any]:
        return {"server": self._cpu(self.server) or 0.0, "backends": dict(self.backends)}

    def close(self) -> None:
        self.stop.set()
        self.poller.join()

    @staticmethod
    def spent(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
        backends = after["backends"]
        return {
            "server": after["server"] - before["server"],
            "database": sum(cpu - before["backends"].get(p, 0.0) for p, cpu in backends.items()),
            "pgBackendsOpened": len(backends.keys() - before["backends"].keys()),
        }


# ---- one measured window ------------------------------------------------------------------


def window(side: dict[str, Any], scenario: str, clients: int, args: argparse.Namespace) -> dict:
    """Run the load generator once; the window lasts from its start to the last response
    (the requests in flight at the end included)."""
    start_at = time.monotonic() + 1.5
    job = {
        "host": "127.0.0.1",
        "port": side["port"],
        "headers": HEADERS,
        "token": side["token"],
        "user": USER,
        "expectRuns": SEEDED_RUNS,
        "scenario": scenario,
        "clients": clients,
        "startAt": start_at,
        "ramp": args.ramp,
        "end": start_at + args.seconds,
    }
    argv = [sys.executable, str(HERE / "host_load.py"), json.dumps(job)]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, text=True, preexec_fn=pinned(args.client_cpu)
    )
    meter = CpuMeter(side["pid"], side["pg"], side["appName"])
    time.sleep(max(0.0, start_at - time.monotonic()))
    before = meter.snapshot()
    out, _ = proc.communicate(timeout=900)
    cpu = CpuMeter.spent(before, meter.snapshot())
    meter.close()
    if proc.returncode:
        sys.exit(f"the load generator failed (exit {proc.returncode})")
    part = json.loads(out.strip().splitlines()[-1])
    cpu["clients"] = part["cpu"]
    return {**part, "wall": part["last"] - start_at, "cpu": cpu}


def by_round(windows: list[dict]) -> list[float]:
    """Requests/s of each round (its windows pooled: completed requests / their time)."""
    rounds: dict[int, list[dict]] = {}
    for w in windows:
        rounds.setdefault(w["round"], []).append(w)
    return [
        sum(len(w["latencies"]) for w in ws) / sum(w["wall"] for w in ws)
        for _, ws in sorted(rounds.items())
    ]


def summarise(side: str, scenario: str, clients: int, windows: list[dict]) -> dict:
    """One side's figures over every round of a scenario at one client count."""
    lat = [x for w in windows for x in w["latencies"]]
    ttfe = [x for w in windows for x in w["ttfe"]]
    done = len(lat)
    cpu = {k: sum(w["cpu"][k] for w in windows) for k in ("server", "database", "clients")}
    per_k = {k: (v / done * 1000 if done else float("nan")) for k, v in cpu.items()}
    wall = sum(w["wall"] for w in windows)
    return {
        "side": side,
        "scenario": scenario,
        "clients": clients,
        "completed": done,
        "wallSeconds": wall,
        "perSecond": done / wall,
        "perSecondByRound": by_round(windows),
        "p50Ms": pct(lat, 0.5),
        "p95Ms": pct(lat, 0.95),
        "ttfeP50Ms": pct(ttfe, 0.5) if ttfe else None,
        "ttfeP95Ms": pct(ttfe, 0.95) if ttfe else None,
        "errors": sum(len(w["errors"]) for w in windows),
        "errorSamples": [e for w in windows for e in w["errors"][:2]][:4],
        "cpuSeconds": cpu,
        "cpuMsPerRequest": per_k,
        "serverCpuShare": cpu["server"] / wall,
        "clientCpuShare": cpu["clients"] / wall,
        "pgBackendsOpenedPerSecond": sum(w["cpu"]["pgBackendsOpened"] for w in windows) / wall,
        "loadAverages": [w["load"] for w in windows],
    }


def ratios(summaries: dict[tuple[int, str, str], dict]) -> list[dict[str, Any]]:
    """nyla / bare for each figure of each scenario at each client count."""

    def ratio(x: float | None, y: float | None) -> float | None:
        return x / y if x is not None and y else None

    out = []
    for clients, scenario in dict.fromkeys((n, c) for n, c, _ in summaries):
        n, b = summaries[clients, scenario, "nyla"], summaries[clients, scenario, "bare"]
        out.append(
            {
                "clients": clients,
                "scenario": scenario,
                "perSecond": ratio(n["perSecond"], b["perSecond"]),
                # each round's windows ran A B B A: the spread says how much the machine's
                # other load moved the ratio
                "perSecondByRound": [
                    ratio(x, y)
                    for x, y in zip(n["perSecondByRound"], b["perSecondByRound"], strict=True)
                ],
                "p50Ms": ratio(n["p50Ms"], b["p50Ms"]),
                "p95Ms": ratio(n["p95Ms"], b["p95Ms"]),
                "ttfeP50Ms": ratio(n["ttfeP50Ms"], b["ttfeP50Ms"]),
                "ttfeP95Ms": ratio(n["ttfeP95Ms"], b["ttfeP95Ms"]),
                "serverCpuPerRequest": ratio(
                    n["cpuMsPerRequest"]["server"], b["cpuMsPerRequest"]["server"]
                ),
            }
        )
    return out


# ---- set-up ---------------------------------------------------------------------------------


async def prepare(schema: str) -> tuple[str, str]:
    """Schema, tables, an API token and :data:`SEEDED_RUNS` finished runs of the bench user;
    returns (database URL, token)."""
    from datetime import UTC, datetime, timedelta

    import nyla_host.tables  # noqa: F401
    from nyla.db import resolve_url
    from nyla.host import Database
    from nyla_host.tables import HostRunRow
    from nyla_host.tokens import TokenStore

    url = resolve_url()
    db = Database(url, schema=schema)
    await db.ensure_ready()
    token, _ = await TokenStore(db).create(USER, name="bench/host.py")
    long_ago = datetime.now(UTC) - timedelta(days=1)
    async with db.session() as s:
        for i in range(SEEDED_RUNS):
            at = long_ago + timedelta(seconds=i)
            s.add(
                HostRunRow(
                    run_id=f"seed{i:04d}",
                    user_id=USER,
                    status="done",
                    prompt=f"question {i}",
                    final_text=f"answer {i} " * 20,
                    last_seq=17,
                    timezone="Europe/Zurich",
                    started_at=at,
                    finished_at=at + timedelta(seconds=2),
                )
            )
    await db.dispose()
    return url, token


async def drop(url: str, schema: str) -> None:
    from nyla.host import Database

    db = Database(url, schema=schema)
    await db.drop_schema()
    await db.dispose()


def capture_events(base: str, token: str) -> list[dict[str, Any]]:
    """The events of one nyla run (without its id): what the bare app replays."""
    import httpx

    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
        run = http.post("/api/runs", json={"prompt": "hello from the benchmark"})
        if run.status_code != 202:
            sys.exit(f"nyla answered POST /api/runs with {run.status_code}: {run.text[:500]}")
        events = []
        with http.stream("GET", run.json()["eventsUrl"]) as stream:
            kind = ""
            for line in stream.iter_lines():
                if line.startswith("event:"):
                    kind = line.partition(":")[2].strip()
                elif line.startswith("data:") and kind != "end":
                    event = json.loads(line.partition(":")[2])
                    event.pop("runId", None)
                    events.append(event)
    if not events or any(e["type"] == "error" for e in events):
        sys.exit(f"the captured nyla run did not succeed: {events}")
    return events


def warm_up(side: dict[str, Any], args: argparse.Namespace, times: int = 10) -> None:
    """A few runs one after the other, then each read scenario at the highest client count
    for a second through the load generator: both servers' connection pools are as full as
    the windows will need (the bare app opens its 10 at start; nyla's pools grow on demand,
    and a window would otherwise pay for the connections they open)."""
    import httpx

    headers = {**HEADERS, "Authorization": f"Bearer {side['token']}"}
    base = f"http://127.0.0.1:{side['port']}"
    with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
        for _ in range(times):
            http.get("/api/me").raise_for_status()
            http.get("/api/runs").raise_for_status()
            run = http.post("/api/runs", json={"prompt": "warm-up"})
            with http.stream("GET", run.raise_for_status().json()["eventsUrl"]) as stream:
                for _line in stream.iter_lines():
                    pass
    for scenario in ("me", "runs"):
        start_at = time.monotonic() + 0.5
        job = {
            "host": "127.0.0.1",
            "port": side["port"],
            "headers": HEADERS,
            "token": side["token"],
            "user": USER,
            "expectRuns": SEEDED_RUNS,
            "scenario": scenario,
            "clients": max(args.clients),
            "startAt": start_at,
            "ramp": 0.2,
            "end": start_at + 1.0,
        }
        argv = [sys.executable, str(HERE / "host_load.py"), json.dumps(job)]
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, timeout=300)


def token_cache_seconds() -> float:
    """nyla's verified-token TTL while it hears revocations (as ``nyla serve`` does; 0 when
    it has no cache): the bare app gets the same."""
    from nyla_host import tokens

    return float(getattr(tokens, "HEARD_TTL_S", getattr(tokens, "CACHE_TTL_S", 0.0)))


# ---- report, main -----------------------------------------------------------------------------


def machine() -> str:
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores, load {load} (1/5/15 min), Python {sys.version.split()[0]}"


def report(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    def num(value: float | None, fmt: str = ".1f") -> str:
        return "-" if value is None or value != value else format(value, fmt)

    console = Console(width=220)
    load = result["load"]
    console.print(f"machine: {result['machine']['summary']}")
    console.print(
        f"load: {', '.join(map(str, load['clients']))} closed-loop clients (raw HTTP/1.1 "
        f"keep-alive, one process pinned to CPU {load['clientCpu']}; servers pinned to CPU "
        f"{load['serverCpu']}, PostgreSQL unpinned) starting over {load['rampSeconds']:g} s, "
        f"requests started for {load['seconds']:g} s per window, {load['rounds']} rounds "
        f"as A B B A nyla / bare; verified-token cache {load['tokenCacheSeconds']:g} s on "
        f"both sides; SSE: {load['eventsPerRun']} events per run"
    )
    table = Table(title="nyla serve vs a bare FastAPI app with the same database work")
    columns = ["clients", "scenario", "server", "req/s", "by round", "p50 ms", "p95 ms"]
    columns += ["TTFE p50 ms", "TTFE p95 ms", "errors", "server CPU ms/req", "PG CPU ms/req ≥"]
    columns += ["client CPU ms/req", "server CPU/s", "client CPU/s", "PG conns opened/s"]
    for col in columns:
        table.add_column(col, justify="left" if col in ("scenario", "server") else "right")
    for s in result["results"]:
        table.add_row(
            str(s["clients"]),
            LABELS[s["scenario"]],
            s["side"],
            num(s["perSecond"]),
            " ".join(num(x, ".0f") for x in s["perSecondByRound"]),
            num(s["p50Ms"]),
            num(s["p95Ms"]),
            num(s["ttfeP50Ms"]),
            num(s["ttfeP95Ms"]),
            str(s["errors"]),
            num(s["cpuMsPerRequest"]["server"], ".2f"),
            num(s["cpuMsPerRequest"]["database"], ".2f"),
            num(s["cpuMsPerRequest"]["clients"], ".2f"),
            num(s["serverCpuShare"], ".2f"),
            num(s["clientCpuShare"], ".2f"),
            num(s["pgBackendsOpenedPerSecond"], ".1f"),
        )
    for r in result["ratios"]:
        row = [str(r["clients"]), LABELS[r["scenario"]], "nyla / bare"]
        row += [num(r["perSecond"], ".2f"), "", num(r["p50Ms"], ".2f"), num(r["p95Ms"], ".2f")]
        row += [num(r["ttfeP50Ms"], ".2f"), num(r["ttfeP95Ms"], ".2f"), ""]
        row += [num(r["serverCpuPerRequest"], ".2f"), "", "", "", "", ""]
        table.add_row(*row)
    console.print(table)
    for r in result["ratios"]:
        if r["scenario"] != "sse" and r["perSecond"] is not None:
            met = "met" if r["perSecond"] >= GOAL else "NOT met"
            rounds = " ".join(num(x, ".2f") for x in r["perSecondByRound"])
            console.print(
                f"goal req/s ≥ {GOAL}× bare, {LABELS[r['scenario']]} at {r['clients']} "
                f"clients: {r['perSecond']:.2f} ({met}; by round {rounds}; server CPU per "
                f"request {num(r['serverCpuPerRequest'], '.2f')}×)"
            )
    console.print(f"* {result['fixture']}")
    for s in result["results"]:
        for sample in s["errorSamples"]:
            console.print(f"  error ({s['side']}, {s['scenario']}): {sample}")
    console.print(f"machine after: {result['machine']['after']}")


def measure(args: argparse.Namespace, sides: dict[str, dict[str, Any]]) -> dict:
    """Every round: each client count and scenario on both servers, A B B A."""
    keys = [(n, c, s) for n in args.clients for c in args.scenario for s in SIDES]
    windows: dict[tuple[int, str, str], list[dict]] = {k: [] for k in keys}
    for r in range(args.rounds):
        for clients in args.clients:
            for scenario in args.scenario:
                first = SIDES if r % 2 == 0 else SIDES[::-1]
                for side in (*first, *first[::-1]):
                    w = window(sides[side], scenario, clients, args)
                    w["load"], w["round"] = os.getloadavg()[0], r
                    windows[clients, scenario, side].append(w)
                    print(
                        f"round {r + 1} {clients:>3} {scenario:>4} {side:>4}: "
                        f"{len(w['latencies']) / w['wall']:8.1f}/s, {len(w['errors'])} errors, "
                        f"server CPU {w['cpu']['server']:.1f} s, client {w['cpu']['clients']:.1f}"
                        f" s, load {w['load']:.1f}",
                        file=sys.stderr,
                        flush=True,
                    )
                    time.sleep(0.5)
    return {k: summarise(k[2], k[1], k[0], v) for k, v in windows.items()}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import psycopg
    from psycopg.conninfo import make_conninfo

    schema = f"bench_host_{uuid.uuid4().hex[:8]}"
    workdir = Path(tempfile.mkdtemp(prefix="nyla-bench-host-"))
    url, token = asyncio.run(prepare(schema))
    plain = url.replace("postgresql+psycopg://", "postgresql://")
    sep = "&" if "?" in url else "?"
    procs: list[subprocess.Popen[bytes]] = []
    before = machine()
    ttl = token_cache_seconds()
    try:
        nyla_url = f"{url}{sep}application_name=nyla-{schema}"
        nyla = start_nyla(nyla_url, schema, args.port, args, workdir / "nyla.log")
        procs.append(nyla)
        events = capture_events(f"http://127.0.0.1:{args.port}", token)
        conninfo = make_conninfo(
            plain, options=f"-csearch_path={schema},public", application_name=f"bare-{schema}"
        )
        spec = workdir / "bare.json"
        spec.write_text(
            json.dumps({"conninfo": conninfo, "events": events, "tokenCacheSeconds": ttl})
        )
        bare = start_bare(args.port + 1, spec, args, workdir / "bare.log")
        procs.append(bare)
        with (
            psycopg.connect(plain, autocommit=True) as pg_nyla,
            psycopg.connect(plain, autocommit=True) as pg_bare,
        ):
            sides = {
                "nyla": {"port": args.port, "pid": nyla.pid, "appName": f"nyla-{schema}"},
                "bare": {"port": args.port + 1, "pid": bare.pid, "appName": f"bare-{schema}"},
            }
            sides["nyla"]["pg"], sides["bare"]["pg"] = pg_nyla, pg_bare
            for side in sides.values():
                side["token"] = token
                warm_up(side, args)
            summaries = measure(args, sides)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
        asyncio.run(drop(url, schema))
    return {
        "machine": {"cores": os.cpu_count(), "summary": before, "after": machine()},
        "load": {
            "clients": args.clients,
            "serverCpu": args.server_cpu,
            "clientCpu": args.client_cpu,
            "seconds": args.seconds,
            "rampSeconds": args.ramp,
            "rounds": args.rounds,
            "wordDelayS": args.word_delay,
            "eventsPerRun": len(events),
            "tokenCacheSeconds": ttl,
        },
        "fixture": (
            "run + SSE measures a FIXTURE: nyla's scripted demo:echo model (word delay "
            f"{args.word_delay:g} s), so it is the host's and the kernel's cost of a run, not a "
            "model's; the bare app records the run and replays the same events"
        ),
        "results": list(summaries.values()),
        "ratios": ratios(summaries),
    }


def main() -> None:
    if "--scale-out" in sys.argv[1:]:
        from host_scale import main as scale_out

        scale_out([a for a in sys.argv[1:] if a != "--scale-out"])
        return
    cpus = sorted(os.sched_getaffinity(0))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--seconds", type=float, default=4.0, help="measured seconds per window")
    parser.add_argument("--ramp", type=float, default=1.0, help="seconds to start all clients")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--scenario", nargs="+", choices=SCENARIOS, default=list(SCENARIOS), help="default: all"
    )
    parser.add_argument("--word-delay", type=float, default=0.0, help="demo model, seconds")
    parser.add_argument("--port", type=int, default=8765, help="nyla's; the bare app's is +1")
    parser.add_argument("--server-cpu", type=int, default=cpus[0], help="the servers' core")
    parser.add_argument("--client-cpu", type=int, default=cpus[-1], help="the client's core")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON ('-': stdout)")
    args = parser.parse_args()
    if args.server_cpu == args.client_cpu:
        parser.error("the servers and the load generator need different cores (2 or more)")
    if min(args.clients) < 1 or args.rounds < 1:
        parser.error("need at least one client and at least one round")
    result = run(args)
    if args.json == "-":
        print(json.dumps(result, indent=2))
        return
    report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
        print(f"written {args.json}")


if __name__ == "__main__":
    main()
