"""Load benchmark of ``nyla serve`` on loopback: N concurrent clients each run a mix of a
streamed agent run (scripted demo model: POST /api/runs, then the SSE stream to its end), a
knowledge search and an inventory read; reported per client count as requests/s, p50/p95
latency per kind and errors.

    .venv/bin/python bench/host.py [--clients 10,50,200] [--rounds 3] [--port 8765]

It uses its own schema in the embedded PostgreSQL (dropped afterwards), indexes a few text
files for the searches (embedding model ``local:hash-384``, offline), and starts
``nyla serve --demo-model`` with a word delay of 0 (the model is not what is measured).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote

import httpx

ROOT = Path(__file__).resolve().parents[1]
NYLA = Path(sys.executable).with_name("nyla")
CORPUS = [
    "The travel policy allows second class train tickets for business trips.",
    "Quarterly numbers are reviewed by the finance team every March and September.",
    "Invoices above 10000 CHF need the approval of two managers before payment.",
    "The office in Zurich opens at eight and closes at six on weekdays.",
]
QUERIES = ["train tickets", "invoice approval", "office hours Zurich", "quarterly review"]


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of ``values`` in milliseconds."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def prepare(schema: str, workdir: Path) -> tuple[str, str]:
    """Schema, tables, a token and an indexed corpus; returns (database URL, token)."""
    import nyla_host.tables  # noqa: F401
    from nyla import Database, Kernel, RunContext
    from nyla.db import resolve_url
    from nyla_host.tokens import TokenStore

    url = resolve_url()
    db = Database(url, schema=schema)
    await db.ensure_ready()
    token, _ = await TokenStore(db).create("bench", name="bench/host.py")
    for i, text in enumerate(CORPUS):
        (workdir / f"doc{i}.txt").write_text(text)
    kernel = Kernel(db=db, settings={"knowledge": {"embedding_model": "local:hash-384"}})
    await kernel.knowledge.index_paths([workdir], context=RunContext(user_id="bench"))
    await db.dispose()
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema},public')}", token


async def client_loop(http: httpx.AsyncClient, rounds: int, out: dict, errors: dict) -> None:
    """One client: ``rounds`` x (streamed run, search, inventory)."""
    for i in range(rounds):
        for kind in ("run", "search", "inventory"):
            started = time.perf_counter()
            try:
                if kind == "run":
                    run = await http.post("/api/runs", json={"prompt": f"hello {i}"})
                    run.raise_for_status()
                    ended = False
                    async with http.stream("GET", run.json()["eventsUrl"]) as response:
                        response.raise_for_status()
                        async for line in response.aiter_lines():
                            ended = ended or line == "event: end"
                    if not ended:
                        raise RuntimeError("stream closed before its end event")
                elif kind == "search":
                    query = QUERIES[i % len(QUERIES)]
                    response = await http.get("/api/knowledge/search", params={"q": query})
                    response.raise_for_status()
                    if not response.json()["hits"]:
                        raise RuntimeError("search found nothing")
                else:
                    (await http.get("/api/rag/inventory/me")).raise_for_status()
                out[kind].append(time.perf_counter() - started)
            except Exception as exc:
                errors[kind].append(f"{type(exc).__name__}: {exc}"[:120])


async def level(base: str, token: str, clients: int, rounds: int) -> dict:
    """Run ``clients`` concurrent clients; the measured figures."""
    out: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, list[str]] = defaultdict(list)
    limits = httpx.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    headers = {"Authorization": f"Bearer {token}", "X-User-Timezone": "Europe/Zurich"}
    async with httpx.AsyncClient(
        base_url=base, headers=headers, timeout=120, limits=limits
    ) as http:
        started = time.perf_counter()
        await asyncio.gather(*(client_loop(http, rounds, out, errors) for _ in range(clients)))
        wall = time.perf_counter() - started
    done = sum(len(v) for v in out.values())
    failed = sum(len(v) for v in errors.values())
    return {
        "clients": clients,
        "wall": wall,
        "done": done,
        "errors": failed,
        "out": out,
        "samples": [e for v in errors.values() for e in v[:2]],
    }


def start_server(url: str, port: int, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "NYLA_DATABASE_URL": url,
        "NYLA_DEMO_MODEL_DELAY": "0",
        "NYLA_EMBEDDING_MODEL": "local:hash-384",
    }
    proc = subprocess.Popen(
        [str(NYLA), "serve", "--demo-model", "--port", str(port)],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    for _ in range(300):
        if proc.poll() is not None:
            sys.exit(f"nyla serve exited:\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    sys.exit("nyla serve did not start")


def report(results: list[dict]) -> None:
    print(
        "\n| clients | requests | wall s | req/s | errors | run p50/p95 ms | search p50/p95 ms "
        "| inventory p50/p95 ms |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        cells = [
            f"{pct(r['out'][k], 0.5):.0f} / {pct(r['out'][k], 0.95):.0f}"
            for k in ("run", "search", "inventory")
        ]
        print(
            f"| {r['clients']} | {r['done']} | {r['wall']:.1f} | {r['done'] / r['wall']:.1f} "
            f"| {r['errors']} | " + " | ".join(cells) + " |"
        )
    for r in results:
        for sample in r["samples"]:
            print(f"  error at {r['clients']} clients: {sample}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="10,50,200")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    import tempfile

    schema = f"bench_{uuid.uuid4().hex[:8]}"
    workdir = Path(tempfile.mkdtemp(prefix="nyla-bench-host-"))
    url, token = asyncio.run(prepare(schema, workdir))
    proc = start_server(url, args.port, workdir / "serve.log")
    try:
        base = f"http://127.0.0.1:{args.port}"
        results = []
        for clients in (int(c) for c in args.clients.split(",")):
            result = asyncio.run(level(base, token, clients, args.rounds))
            print(
                f"{clients} clients: {result['done']} requests in {result['wall']:.1f} s, "
                f"{result['errors']} errors",
                flush=True,
            )
            results.append(result)
        report(results)
    finally:
        proc.terminate()
        proc.wait(20)
        asyncio.run(drop(schema))


async def drop(schema: str) -> None:
    from nyla import Database

    db = Database(schema=schema)
    await db.drop_schema()
    await db.dispose()


if __name__ == "__main__":
    main()
