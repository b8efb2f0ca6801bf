"""The reference of ``bench/host.py``: a bare FastAPI app serving nyla's routes with the same
database work and nothing else. It imports no nyla.

Same PostgreSQL (the bench's schema, nyla's own tables), same driver (psycopg 3, async), same
uvicorn settings as ``nyla serve`` (and its ``gc.freeze()`` of the start-up heap). Per request it does what nyla does, written directly:

- the bearer check reads the API token's row (``host_api_tokens`` by id, the SHA-256 of the
  secret compared in constant time, revocation and expiry checked), with the same
  verified-token cache as nyla's (``tokenCacheSeconds`` of the spec, nyla's own TTL; 0 = a
  query every request): the same cost class of auth check on both sides;
- ``GET /api/me``: the identity and the request's timezone (validated as nyla does);
- ``GET /api/runs``: the caller's 50 latest runs from ``host_runs``, with local times;
- ``POST /api/runs``: inserts the run row, then replays the events captured from one nyla
  run through a queue (a background task; no agent), writes them to ``host_run_events`` and
  the run's end to ``host_runs`` when it ends;
- ``GET /api/runs/{id}/events``: checks the run is the caller's (a row read), streams the
  events with nyla's SSE framing, reads the final status for the ``end`` message.

Connections come from a fixed pool of :data:`POOL_SIZE`, autocommit, opened at start-up: as
many as nyla's driver read pool (``nyla.read_pool``, 10), from which nyla reads the token,
the run list and a run's row (its SQLAlchemy engine, 5 + 10 overflow, serves the writes of a
run).

    python bench/host_bare.py PORT SPEC.json
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import hmac
import json
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

from pydantic import BaseModel, Field

POOL_SIZE = 10
ZONES = frozenset(available_timezones())
RUN_COLUMNS = (
    "run_id, user_id, mandate_id, status, prompt, final_text, cost_chf, last_seq, timezone, "
    "error, started_at, finished_at"
)


class Pool:
    """A fixed set of autocommit psycopg connections handed out through a queue."""

    def __init__(self, conninfo: str, size: int) -> None:
        self.conninfo, self.size = conninfo, size
        self.idle: asyncio.Queue[Any] = asyncio.Queue()

    async def open(self) -> None:
        import psycopg

        for _ in range(self.size):
            conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
            self.idle.put_nowait(conn)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        conn = await self.idle.get()
        try:
            yield conn
        finally:
            self.idle.put_nowait(conn)

    async def close(self) -> None:
        while not self.idle.empty():
            await self.idle.get_nowait().close()


class RunBody(BaseModel):
    """``POST /api/runs``: the prompt."""

    prompt: str = Field(min_length=1, max_length=100_000)


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def app_for(spec: dict[str, Any]) -> Any:
    from fastapi import Depends, FastAPI, Header, HTTPException
    from fastapi.responses import StreamingResponse

    pool = Pool(spec["conninfo"], POOL_SIZE)
    ttl = float(spec["tokenCacheSeconds"])
    verified: dict[str, tuple[float, dict[str, Any]]] = {}
    events: list[dict[str, Any]] = spec["events"]
    live: dict[str, asyncio.Queue[dict[str, Any] | None]] = {}
    tasks: set[asyncio.Task[None]] = set()

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        await pool.open()
        yield
        await pool.close()

    app = FastAPI(lifespan=lifespan, openapi_url=None, docs_url=None, redoc_url=None)

    async def lookup(token: str) -> dict[str, Any] | None:
        if not token.startswith("nyla_"):
            return None
        token_id, _, secret = token[5:].partition("_")
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT secret_hash, user_id, mandate_id, role, name, revoked_at, expires_at "
                "FROM host_api_tokens WHERE id = %s",
                (token_id,),
            )
            row = await cur.fetchone()
        if row is None:
            return None
        digest = hashlib.sha256(secret.encode()).hexdigest()
        if not hmac.compare_digest(row[0], digest) or row[5] is not None:
            return None
        if row[6] is not None and row[6] <= datetime.now(UTC):
            return None
        return {"userId": row[1], "mandateId": row[2], "role": row[3], "name": row[4]}

    async def identity(authorization: str = Header(default="")) -> dict[str, Any]:
        scheme, _, value = authorization.partition(" ")
        token = value.strip() if scheme.lower() == "bearer" else ""
        hit = verified.get(token) if ttl > 0 else None
        now = time.monotonic()
        if hit is not None and hit[0] > now:
            return hit[1]
        found = await lookup(token) if token else None
        if found is None:
            raise HTTPException(401, "sign in with a bearer token")
        if ttl > 0:
            verified[token] = (now + ttl, found)
        return found

    def zone(raw: str) -> str:
        return raw if raw in ZONES else "UTC"

    @app.get("/api/me")
    async def me(
        who: dict[str, Any] = Depends(identity),
        tz: str = Header(default="UTC", alias="X-User-Timezone"),
    ) -> dict[str, Any]:
        name = zone(tz)
        now = datetime.now(UTC).astimezone(ZoneInfo(name)).isoformat()
        return {**who, "via": "token", "timezone": name, "now": now}

    @app.get("/api/runs")
    async def list_runs(
        who: dict[str, Any] = Depends(identity),
        tz: str = Header(default="UTC", alias="X-User-Timezone"),
    ) -> dict[str, Any]:
        async with pool.connection() as conn:
            cur = await conn.execute(
                f"SELECT {RUN_COLUMNS} FROM host_runs WHERE user_id = %s "
                "ORDER BY started_at DESC LIMIT 50",
                (who["userId"],),
            )
            rows = await cur.fetchall()
        local = ZoneInfo(zone(tz))
        runs = []
        for r in rows:
            runs.append(
                {
                    "runId": r[0],
                    "userId": r[1],
                    "mandateId": r[2],
                    "status": r[3],
                    "prompt": r[4],
                    "finalText": r[5],
                    "costChf": r[6],
                    "lastEventId": r[7],
                    "timezone": r[8],
                    "error": r[9],
                    "startedAt": iso(r[10]),
                    "finishedAt": iso(r[11]),
                    "startedAtLocal": iso(r[10].astimezone(local)) if r[10] else None,
                }
            )
        return {"runs": runs}

    async def produce(run_id: str, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        rows = []
        for event in events:
            data = {**event, "runId": run_id}
            rows.append((run_id, data["seq"], data["type"], json.dumps(data)))
            await queue.put(data)
        async with pool.connection() as conn, conn.transaction():
            async with conn.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO host_run_events (run_id, seq, type, payload) "
                    "VALUES (%s, %s, %s, %s::jsonb)",
                    rows,
                )
            await conn.execute(
                "UPDATE host_runs SET status = 'done', last_seq = %s, finished_at = now() "
                "WHERE run_id = %s",
                (rows[-1][1], run_id),
            )
        await queue.put(None)

    @app.post("/api/runs", status_code=202)
    async def start(
        body: RunBody,
        who: dict[str, Any] = Depends(identity),
        tz: str = Header(default="UTC", alias="X-User-Timezone"),
    ) -> dict[str, Any]:
        run_id = uuid.uuid4().hex
        async with pool.connection() as conn:
            await conn.execute(
                "INSERT INTO host_runs (run_id, user_id, mandate_id, status, prompt, "
                "final_text, cost_chf, last_seq, timezone, started_at) "
                "VALUES (%s, %s, %s, 'running', %s, '', 0, 0, %s, now())",
                (run_id, who["userId"], who["mandateId"], body.prompt, zone(tz)),
            )
        queue = live[run_id] = asyncio.Queue()
        task = asyncio.create_task(produce(run_id, queue))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return {"runId": run_id, "status": "running", "eventsUrl": f"/api/runs/{run_id}/events"}

    async def row_of(run_id: str, who: dict[str, Any]) -> tuple[str, int]:
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT user_id, status, last_seq FROM host_runs WHERE run_id = %s", (run_id,)
            )
            row = await cur.fetchone()
        if row is None or row[0] != who["userId"]:
            raise HTTPException(404, f"no run {run_id}")
        return row[1], row[2]

    async def frames(run_id: str, who: dict[str, Any]) -> AsyncIterator[str]:
        queue = live[run_id]
        yield "retry: 2000\n\n"
        while (event := await queue.get()) is not None:
            yield f"id: {event['seq']}\nevent: {event['type']}\ndata: {json.dumps(event)}\n\n"
        live.pop(run_id, None)
        status, last = await row_of(run_id, who)
        end = {"runId": run_id, "status": status, "lastEventId": last}
        yield f"event: end\ndata: {json.dumps(end)}\n\n"

    @app.get("/api/runs/{run_id}/events")
    async def stream(run_id: str, who: dict[str, Any] = Depends(identity)) -> Any:
        await row_of(run_id, who)
        if run_id not in live:
            raise HTTPException(404, f"run {run_id} is not live")
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        headers["Connection"] = "keep-alive"
        return StreamingResponse(
            frames(run_id, who), media_type="text/event-stream", headers=headers
        )

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        async with pool.connection() as conn:
            await conn.execute("SELECT 1")
        return {"status": "ok"}

    return app


def main() -> None:
    import uvicorn

    port, spec = int(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
    config = uvicorn.Config(
        app_for(spec), host="127.0.0.1", port=port, log_level="warning", timeout_keep_alive=30
    )
    # as ``nyla serve`` does: the start-up heap out of the collector's reach
    gc.collect()
    gc.freeze()
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
