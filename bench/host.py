"""Host benchmark: ``nyla serve`` beside a bare FastAPI app under the same HTTP load, as a ratio.

Two scenarios at ``--clients`` concurrent closed-loop clients (default 200), the two servers
alternating (nyla first in odd rounds, bare first in even ones) over ``--rounds`` (default 3):

- ``me``: an authenticated light JSON route, ``GET /api/me`` with a bearer API token. nyla checks
  the token against its PostgreSQL table (as every request does); the bare app against a dict.
- ``sse``: ``POST /api/runs``, then ``GET`` its ``eventsUrl`` to the ``end`` message. nyla runs
  the agent with the scripted ``demo:echo`` model (``--demo-model``, word delay ``--word-delay``,
  default 0): a FIXTURE, so these numbers are the host's and the kernel's cost of a run, not a
  model's. The bare app starts a background task that puts the same events (captured from one
  nyla run at start-up) into a queue and streams them with the same SSE framing.
  Time to first event (TTFE) runs from sending the POST to the first ``data:`` line.

A window: the clients start over ``--ramp`` seconds (default 1), start requests for
``--seconds`` (default 10) and finish the ones in flight; requests/s = completed requests / time
from the first start to the last response (at 200 clients a nyla run can take longer than the
window, so counting only what ends inside it would measure nothing). CPU seconds (user +
system, from /proc through psutil) over the same time: the server process, nyla's PostgreSQL
backends (found by ``application_name``, polled: a lower bound) and the client processes.

Both servers are one uvicorn process on loopback with the same settings (h11, asyncio loop,
keep-alive 30 s, log level warning): nyla is started as a user starts it, ``nyla serve
--demo-model``; the bare app by this script (``--serve-bare``) and imports no nyla. The load
comes from ``--client-procs`` processes (default 1) of httpx.AsyncClient, each with a pool as
large as its share of the clients; their CPU use is printed, so a client-bound run shows.

    .venv/bin/python bench/host.py [--clients 200] [--seconds 10] [--rounds 3]
        [--client-procs 1] [--scenario me sse] [--word-delay 0] [--json results.json | --json -]

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

import httpx
from pydantic import BaseModel, Field

ROOT = Path(__file__).resolve().parents[1]
NYLA = Path(sys.executable).with_name("nyla")
SIDES = ("nyla", "bare")
SCENARIOS = ("me", "sse")
USER = "bench"
HEADERS = {"X-User-Timezone": "Europe/Zurich"}
#: seconds between two readings of nyla's PostgreSQL backends
POLL_S = 0.1


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of ``values`` (seconds) in milliseconds."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


# ---- the bare FastAPI app ---------------------------------------------------------------


class RunBody(BaseModel):
    """The bare app's ``POST /api/runs`` body."""

    prompt: str = Field(min_length=1, max_length=100_000)


def bare_app(token: str, events: list[dict[str, Any]], delay_s: float) -> Any:
    """The same routes as nyla's, with nothing behind them: a dict of tokens, a queue per run."""
    from datetime import UTC, datetime

    from fastapi import Depends, FastAPI, Header, HTTPException
    from fastapi.responses import StreamingResponse

    app = FastAPI()
    tokens = {token: {"userId": USER, "mandateId": None, "role": "user", "name": "bench"}}
    runs: dict[str, asyncio.Queue[dict[str, Any] | None]] = {}
    tasks: set[asyncio.Task[None]] = set()

    async def identity(authorization: str = Header(default="")) -> dict[str, Any]:
        scheme, _, value = authorization.partition(" ")
        found = tokens.get(value.strip()) if scheme.lower() == "bearer" else None
        if found is None:
            raise HTTPException(401, "sign in with a bearer token")
        return found

    @app.get("/api/me")
    async def me(
        who: dict[str, Any] = Depends(identity),
        tz: str = Header(default="UTC", alias="X-User-Timezone"),
    ) -> dict[str, Any]:
        now = datetime.now(UTC).isoformat()
        return {**who, "via": "token", "timezone": tz, "now": now}

    async def produce(run_id: str, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        for event in events:
            if str(event.get("type")).lower() == "chunk":
                await asyncio.sleep(delay_s)
            await queue.put({**event, "runId": run_id})
        await queue.put(None)

    @app.post("/api/runs", status_code=202)
    async def start(body: RunBody, who: dict[str, Any] = Depends(identity)) -> dict[str, Any]:
        run_id = uuid.uuid4().hex
        queue = runs[run_id] = asyncio.Queue()
        task = asyncio.create_task(produce(run_id, queue))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return {"runId": run_id, "status": "running", "eventsUrl": f"/api/runs/{run_id}/events"}

    async def frames(run_id: str, queue: asyncio.Queue[dict[str, Any] | None]) -> Any:
        yield "retry: 2000\n\n"
        seq = 0
        while (event := await queue.get()) is not None:
            seq = event["seq"]
            yield f"id: {seq}\nevent: {event['type']}\ndata: {json.dumps(event)}\n\n"
        runs.pop(run_id, None)
        end = {"runId": run_id, "status": "done", "lastEventId": seq}
        yield f"event: end\ndata: {json.dumps(end)}\n\n"

    @app.get("/api/runs/{run_id}/events")
    async def stream(run_id: str, who: dict[str, Any] = Depends(identity)) -> Any:
        queue = runs.get(run_id)
        if queue is None:
            raise HTTPException(404, f"no run {run_id}")
        headers = {
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
            "Connection": "keep-alive",
        }
        return StreamingResponse(
            frames(run_id, queue), media_type="text/event-stream", headers=headers
        )

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


def serve_bare(port: int, spec: Path) -> None:
    """``--serve-bare``: uvicorn with ``nyla serve``'s settings, on the bare app."""
    import uvicorn

    data = json.loads(spec.read_text())
    app = bare_app(data["token"], data["events"], data["delay"])
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", timeout_keep_alive=30
    )
    uvicorn.Server(config).run()


# ---- the client (a worker process) ------------------------------------------------------


async def one_run(http: httpx.AsyncClient, started: float) -> float:
    """POST a run and read its stream to the end; returns the seconds from ``started`` to
    its first event."""
    response = await http.post("/api/runs", json={"prompt": "hello from the benchmark"})
    response.raise_for_status()
    first, ended = 0.0, False
    async with http.stream("GET", response.json()["eventsUrl"]) as stream:
        stream.raise_for_status()
        async for line in stream.aiter_lines():
            if not first and line.startswith("data:"):
                first = time.monotonic()
            ended = ended or line == "event: end"
    if not ended or not first:
        raise RuntimeError("the stream closed before its end message")
    return first - started


async def load(job: dict[str, Any]) -> dict[str, Any]:
    """``job['clients']`` closed-loop clients, their starts spread over ``job['ramp']``
    seconds; each starts requests until ``job['end']`` and finishes the one in flight."""
    done: list[float] = []
    latencies: list[float] = []
    ttfe: list[float] = []
    errors: list[str] = []
    limits = httpx.Limits(max_connections=job["clients"], max_keepalive_connections=job["clients"])
    headers = {**HEADERS, "Authorization": f"Bearer {job['token']}"}

    async def client(http: httpx.AsyncClient, i: int) -> None:
        await asyncio.sleep(job["ramp"] * i / job["clients"])
        while time.monotonic() < job["end"]:
            started = time.monotonic()
            try:
                if job["scenario"] == "me":
                    response = await http.get("/api/me")
                    response.raise_for_status()
                    if response.json()["userId"] != USER:
                        raise RuntimeError(f"wrong user {response.json()['userId']}")
                else:
                    ttfe.append(await one_run(http, started))
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:160])
                await asyncio.sleep(0.05)
                continue
            done.append(time.monotonic())
            latencies.append(done[-1] - started)

    async with httpx.AsyncClient(
        base_url=job["base"], headers=headers, timeout=120, limits=limits
    ) as http:
        await asyncio.sleep(max(0.0, job["startAt"] - time.monotonic()))
        cpu = time.process_time()
        await asyncio.gather(*(client(http, i) for i in range(job["clients"])))
        cpu = time.process_time() - cpu
    last = max(done, default=job["startAt"])
    return {"latencies": latencies, "ttfe": ttfe, "errors": errors, "last": last, "cpu": cpu}


# ---- the servers and their CPU ------------------------------------------------------------


def wait_healthy(proc: subprocess.Popen[bytes], port: int, log: Path, what: str) -> None:
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


def start_nyla(
    url: str, schema: str, port: int, delay: float, log: Path
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "NYLA_DATABASE_URL": url,
        "NYLA_DATABASE_SCHEMA": schema,
        "NYLA_DEMO_MODEL_DELAY": str(delay),
    }
    argv = [str(NYLA), "serve", "--demo-model", "--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(argv, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    wait_healthy(proc, port, log, "nyla serve")
    return proc


def start_bare(port: int, spec: Path, log: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, __file__, "--serve-bare", str(port), "--spec", str(spec)]
    proc = subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT)
    wait_healthy(proc, port, log, "the bare app")
    return proc


class CpuMeter:
    """CPU seconds (user + system) of a server and (nyla) its PostgreSQL backends.

    nyla's pool opens and closes backends under load, so they are polled every
    :data:`POLL_S` and each one's last reading kept: a backend that lived less than that is
    missed, so the PostgreSQL figure is a lower bound."""

    def __init__(self, server: int, pg: Any, app_name: str | None) -> None:
        self.server, self.pg, self.app_name = server, pg, app_name
        self.backends: dict[int, float] = {}
        self.stop = threading.Event()
        self.poller = threading.Thread(target=self._poll, daemon=True)
        if app_name is not None:
            self.poller.start()

    @staticmethod
    def _cpu(pid: int) -> float | None:
        import psutil

        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            return None
        return float(times.user + times.system)

    def _poll(self) -> None:
        query = "SELECT pid FROM pg_stat_activity WHERE application_name = %s"
        while not self.stop.wait(POLL_S):
            for (pid,) in self.pg.execute(query, (self.app_name,)).fetchall():
                cpu = self._cpu(pid)
                if cpu is not None:
                    self.backends[pid] = cpu

    def snapshot(self) -> dict[str, Any]:
        return {
            "server": self._cpu(self.server) or 0.0,
            "backends": dict(self.backends),
        }

    def close(self) -> None:
        self.stop.set()
        if self.poller.is_alive():
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


def window(side: dict[str, Any], scenario: str, args: argparse.Namespace, pg: Any) -> dict:
    """Start the client processes, let them run, collect their results; the window lasts
    from their start to the last response (the requests in flight at the end included)."""
    start_at = time.monotonic() + 3.0
    procs = []
    share = [args.clients // args.client_procs] * args.client_procs
    for i in range(args.clients % args.client_procs):
        share[i] += 1
    for clients in share:
        job = {
            "base": side["base"],
            "token": side["token"],
            "scenario": scenario,
            "clients": clients,
            "startAt": start_at,
            "ramp": args.ramp,
            "end": start_at + args.seconds,
        }
        argv = [sys.executable, __file__, "--client-job", json.dumps(job)]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, text=True))
    meter = CpuMeter(side["pid"], pg, side["appName"])
    time.sleep(max(0.0, start_at - time.monotonic()))
    before = meter.snapshot()
    parts = []
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        if proc.returncode:
            sys.exit(f"a client process failed (exit {proc.returncode})")
        parts.append(json.loads(out.strip().splitlines()[-1]))
    cpu = CpuMeter.spent(before, meter.snapshot())
    meter.close()
    cpu["clients"] = sum(p["cpu"] for p in parts)
    return {
        "latencies": [x for p in parts for x in p["latencies"]],
        "ttfe": [x for p in parts for x in p["ttfe"]],
        "errors": [x for p in parts for x in p["errors"]],
        "wall": max(p["last"] for p in parts) - start_at,
        "cpu": cpu,
    }


def summarise(side: str, scenario: str, windows: list[dict]) -> dict:
    """One side's figures over every round of a scenario."""
    lat = [x for w in windows for x in w["latencies"]]
    ttfe = [x for w in windows for x in w["ttfe"]]
    done = len(lat)
    cpu = {k: sum(w["cpu"][k] for w in windows) for k in ("server", "database", "clients")}
    per_k = {k: (v / done * 1000 if done else float("nan")) for k, v in cpu.items()}
    wall = sum(w["wall"] for w in windows)
    return {
        "side": side,
        "scenario": scenario,
        "completed": done,
        "wallSeconds": wall,
        "perSecond": done / wall,
        "perSecondByRound": [len(w["latencies"]) / w["wall"] for w in windows],
        "p50Ms": pct(lat, 0.5),
        "p95Ms": pct(lat, 0.95),
        "ttfeP50Ms": pct(ttfe, 0.5) if ttfe else None,
        "ttfeP95Ms": pct(ttfe, 0.95) if ttfe else None,
        "errors": sum(len(w["errors"]) for w in windows),
        "errorSamples": [e for w in windows for e in w["errors"][:2]][:4],
        "cpuSeconds": cpu,
        "cpuSecondsPer1000": per_k,
        "serverCpuShare": cpu["server"] / wall,
        "clientCpuShare": cpu["clients"] / wall,
        "pgBackendsOpenedPerSecond": sum(w["cpu"]["pgBackendsOpened"] for w in windows) / wall,
    }


# ---- set-up, report, main ------------------------------------------------------------------


async def prepare(schema: str) -> tuple[str, str]:
    """Schema, tables and an API token; returns (database URL, token)."""
    import nyla_host.tables  # noqa: F401
    from nyla import Database
    from nyla.db import resolve_url
    from nyla_host.tokens import TokenStore

    url = resolve_url()
    db = Database(url, schema=schema)
    await db.ensure_ready()
    token, _ = await TokenStore(db).create(USER, name="bench/host.py")
    await db.dispose()
    return url, token


async def drop(url: str, schema: str) -> None:
    from nyla import Database

    db = Database(url, schema=schema)
    await db.drop_schema()
    await db.dispose()


def capture_events(base: str, token: str) -> list[dict[str, Any]]:
    """The events of one nyla run (without its id): what the bare app replays."""
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


def warm_up(side: dict[str, Any], times: int = 10) -> None:
    headers = {**HEADERS, "Authorization": f"Bearer {side['token']}"}
    with httpx.Client(base_url=side["base"], headers=headers, timeout=60) as http:
        for _ in range(times):
            http.get("/api/me").raise_for_status()
            run = http.post("/api/runs", json={"prompt": "warm-up"})
            with http.stream("GET", run.raise_for_status().json()["eventsUrl"]) as stream:
                for _line in stream.iter_lines():
                    pass


def ratios(summaries: dict[tuple[str, str], dict]) -> dict[str, dict[str, float | None]]:
    """nyla / bare for each figure of each scenario."""
    out: dict[str, dict[str, float | None]] = {}
    for scenario in dict.fromkeys(c for _, c in summaries):
        n, b = summaries["nyla", scenario], summaries["bare", scenario]

        def ratio(x: float | None, y: float | None) -> float | None:
            return x / y if x is not None and y else None

        out[scenario] = {
            "perSecond": ratio(n["perSecond"], b["perSecond"]),
            "p50Ms": ratio(n["p50Ms"], b["p50Ms"]),
            "p95Ms": ratio(n["p95Ms"], b["p95Ms"]),
            "ttfeP50Ms": ratio(n["ttfeP50Ms"], b["ttfeP50Ms"]),
            "ttfeP95Ms": ratio(n["ttfeP95Ms"], b["ttfeP95Ms"]),
            "serverCpuPer1000": ratio(
                n["cpuSecondsPer1000"]["server"], b["cpuSecondsPer1000"]["server"]
            ),
        }
    return out


def report(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    def num(value: float | None, fmt: str = ".1f") -> str:
        return "-" if value is None or value != value else format(value, fmt)

    console = Console(width=170)
    load = result["load"]
    console.print(f"machine: {result['machine']['summary']}")
    console.print(
        f"load: {load['clients']} concurrent clients from {load['clientProcs']} client "
        f"process(es) (httpx.AsyncClient, pool = its share of the clients) starting over "
        f"{load['rampSeconds']:g} s, requests started for {load['seconds']:g} s per window and "
        f"finished, {load['rounds']} rounds alternating "
        f"nyla / bare; SSE events: {load['eventsPerRun']} per run"
    )
    table = Table(title="nyla serve vs a bare FastAPI app, loopback HTTP, one uvicorn process each")
    columns = ["scenario", "server", "per s", "by round", "p50 ms", "p95 ms", "TTFE p50 ms"]
    columns += ["TTFE p95 ms", "errors", "server CPU s/1000", "PG CPU s/1000 ≥", "server CPU/s"]
    columns += ["client CPU/s", "PG conns opened/s"]
    for col in columns:
        table.add_column(col, justify="left" if col in ("scenario", "server") else "right")
    for s in result["results"]:
        table.add_row(
            "GET /api/me" if s["scenario"] == "me" else "run + SSE*",
            s["side"],
            num(s["perSecond"]),
            " ".join(num(x, ".0f") for x in s["perSecondByRound"]),
            num(s["p50Ms"]),
            num(s["p95Ms"]),
            num(s["ttfeP50Ms"]),
            num(s["ttfeP95Ms"]),
            str(s["errors"]),
            num(s["cpuSecondsPer1000"]["server"], ".2f"),
            num(s["cpuSecondsPer1000"]["database"], ".2f"),
            num(s["serverCpuShare"], ".2f"),
            num(s["clientCpuShare"], ".2f"),
            num(s["pgBackendsOpenedPerSecond"], ".1f") if s["side"] == "nyla" else "-",
        )
    for scenario, r in result["ratios"].items():
        table.add_row(
            "GET /api/me" if scenario == "me" else "run + SSE*",
            "nyla / bare",
            num(r["perSecond"], ".2f"),
            "",
            num(r["p50Ms"], ".2f"),
            num(r["p95Ms"], ".2f"),
            num(r["ttfeP50Ms"], ".2f"),
            num(r["ttfeP95Ms"], ".2f"),
            "",
            num(r["serverCpuPer1000"], ".2f"),
            "",
            "",
            "",
            "",
        )
    console.print(table)
    console.print(f"* {result['fixture']}")
    for s in result["results"]:
        for sample in s["errorSamples"]:
            console.print(f"  error ({s['side']}, {s['scenario']}): {sample}")
    console.print(f"machine after: {result['machine']['after']}")


def machine() -> str:
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores, load {load} (1/5/15 min), Python {sys.version.split()[0]}"


def measure(args: argparse.Namespace, sides: dict[str, dict[str, Any]], pg: Any) -> dict:
    """Every round: each scenario on both servers, the order alternating."""
    windows: dict[tuple[str, str], list[dict]] = {(s, c): [] for s in SIDES for c in args.scenario}
    for r in range(args.rounds):
        for scenario in args.scenario:
            for side in SIDES if r % 2 == 0 else SIDES[::-1]:
                w = window(sides[side], scenario, args, pg)
                windows[side, scenario].append(w)
                print(
                    f"round {r + 1} {scenario:>3} {side:>4}: {len(w['latencies']) / w['wall']:8.1f}"
                    f"/s, {len(w['errors'])} errors, server CPU {w['cpu']['server']:.1f} s, "
                    f"clients {w['cpu']['clients']:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
                time.sleep(1.0)
    return {k: summarise(k[0], k[1], v) for k, v in windows.items()}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import psycopg

    schema = f"bench_host_{uuid.uuid4().hex[:8]}"
    app_name = f"nyla-{schema}"
    workdir = Path(tempfile.mkdtemp(prefix="nyla-bench-host-"))
    url, token = asyncio.run(prepare(schema))
    sep = "&" if "?" in url else "?"
    procs: list[subprocess.Popen[bytes]] = []
    before = machine()
    try:
        nyla = start_nyla(
            f"{url}{sep}application_name={app_name}",
            schema,
            args.port,
            args.word_delay,
            workdir / "nyla.log",
        )
        procs.append(nyla)
        nyla_base = f"http://127.0.0.1:{args.port}"
        events = capture_events(nyla_base, token)
        spec = workdir / "bare.json"
        spec.write_text(json.dumps({"token": token, "events": events, "delay": args.word_delay}))
        bare = start_bare(args.port + 1, spec, workdir / "bare.log")
        procs.append(bare)
        sides = {
            "nyla": {"base": nyla_base, "token": token, "pid": nyla.pid, "appName": app_name},
            "bare": {
                "base": f"http://127.0.0.1:{args.port + 1}",
                "token": token,
                "pid": bare.pid,
                "appName": None,
            },
        }
        for side in sides.values():
            warm_up(side)
        with psycopg.connect(
            url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True
        ) as pg:
            summaries = measure(args, sides, pg)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
        asyncio.run(drop(url, schema))
    return {
        "machine": {"cores": os.cpu_count(), "summary": before, "after": machine()},
        "load": {
            "clients": args.clients,
            "clientProcs": args.client_procs,
            "seconds": args.seconds,
            "rampSeconds": args.ramp,
            "rounds": args.rounds,
            "wordDelayS": args.word_delay,
            "eventsPerRun": len(events),
        },
        "fixture": (
            "run + SSE measures a FIXTURE: nyla's scripted demo:echo model (word delay "
            f"{args.word_delay:g} s), so it is the host's and the kernel's cost of a run, not a "
            "model's; the bare app replays the same events from a background task"
        ),
        "results": list(summaries.values()),
        "ratios": ratios(summaries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--client-procs", type=int, default=1, help="client processes")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per window")
    parser.add_argument("--ramp", type=float, default=1.0, help="seconds to start all clients")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--scenario", nargs="+", choices=SCENARIOS, default=list(SCENARIOS), help="default: both"
    )
    parser.add_argument("--word-delay", type=float, default=0.0, help="demo model, seconds")
    parser.add_argument("--port", type=int, default=8765, help="nyla's; the bare app's is +1")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON ('-': stdout)")
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--spec", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--client-job", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare(args.serve_bare, args.spec)
        return
    if args.client_job:
        print(json.dumps(asyncio.run(load(json.loads(args.client_job)))))
        return
    if args.clients < args.client_procs or args.client_procs < 1 or args.rounds < 1:
        parser.error("need at least one client per client process and at least one round")
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
