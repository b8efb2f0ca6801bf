"""The load generator of ``bench/host.py``: one process, pinned by its parent to a core of its
own, running closed-loop clients over raw HTTP/1.1 keep-alive connections (asyncio streams,
one connection per client). Hand-written rather than httpx so that the client's CPU per
request (printed) stays a small fraction of a server's and a fast server is not measured at
the client's speed.

    python bench/host_load.py JOB_JSON   -> one JSON line: latencies, TTFE, errors, CPU
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any


class Connection:
    """One keep-alive HTTP/1.1 connection; responses with Content-Length or chunked bodies."""

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host, self.port = host, port
        self.head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": host, **headers}.items())
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _send(self, method: str, path: str, body: bytes | None) -> asyncio.StreamReader:
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        extra = ""
        if body is not None:
            extra = f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.writer.write(f"{method} {path} HTTP/1.1\r\n{self.head}{extra}\r\n".encode())
        if body is not None:
            self.writer.write(body)
        assert self.reader is not None
        return self.reader

    async def _head(self, reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
        raw = await reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        return status, headers

    async def _chunks(self, reader: asyncio.StreamReader, headers: dict[str, str]) -> Any:
        if "content-length" in headers:
            yield await reader.readexactly(int(headers["content-length"]))
            return
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                await reader.readline()
                return
            yield (await reader.readexactly(size + 2))[:-2]

    async def request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        """The response body of a 2xx; raises for any other status."""
        reader = await self._send(method, path, body)
        status, headers = await self._head(reader)
        data = b"".join([c async for c in self._chunks(reader, headers)])
        self._after(headers)
        if not 200 <= status < 300:
            raise RuntimeError(f"{method} {path} answered {status}: {data[:120]!r}")
        return data

    async def sse(self, path: str) -> float:
        """Read an event stream to its ``end`` message; the monotonic time of its first
        ``data:`` line."""
        reader = await self._send("GET", path, None)
        status, headers = await self._head(reader)
        if status != 200:
            raise RuntimeError(f"GET {path} answered {status}")
        first, seen = 0.0, b""
        async for chunk in self._chunks(reader, headers):
            if not first and b"data:" in chunk:
                first = time.monotonic()
            seen = (seen + chunk)[-4096:]
        self._after(headers)
        if not first or b"event: end" not in seen:
            raise RuntimeError("the stream closed before its end message")
        return first

    def _after(self, headers: dict[str, str]) -> None:
        if headers.get("connection", "").lower() == "close":
            self.close()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


async def load(job: dict[str, Any]) -> dict[str, Any]:
    """``job['clients']`` closed-loop clients, their starts spread over ``job['ramp']``
    seconds; each starts requests until ``job['end']`` and finishes the one in flight."""
    done: list[float] = []
    latencies: list[float] = []
    ttfe: list[float] = []
    errors: list[str] = []
    headers = {**job["headers"], "Authorization": f"Bearer {job['token']}"}
    body = json.dumps({"prompt": "hello from the benchmark"}).encode()

    async def one(conn: Connection, started: float) -> None:
        if job["scenario"] == "me":
            who = json.loads(await conn.request("GET", "/api/me"))
            if who["userId"] != job["user"]:
                raise RuntimeError(f"wrong user {who['userId']}")
        elif job["scenario"] == "runs":
            runs = json.loads(await conn.request("GET", "/api/runs"))["runs"]
            if len(runs) != job["expectRuns"]:
                raise RuntimeError(f"{len(runs)} runs listed, not {job['expectRuns']}")
        else:
            run = json.loads(await conn.request("POST", "/api/runs", body))
            ttfe.append(await conn.sse(run["eventsUrl"]) - started)

    async def client(i: int) -> None:
        conn = Connection(job["host"], job["port"], headers)
        await asyncio.sleep(job["ramp"] * i / job["clients"])
        while time.monotonic() < job["end"]:
            started = time.monotonic()
            try:
                await asyncio.wait_for(one(conn, started), 120)
            except Exception as exc:
                conn.close()
                errors.append(f"{type(exc).__name__}: {exc}"[:160])
                await asyncio.sleep(0.05)
                continue
            done.append(time.monotonic())
            latencies.append(done[-1] - started)
        conn.close()

    await asyncio.sleep(max(0.0, job["startAt"] - time.monotonic()))
    cpu = time.process_time()
    await asyncio.gather(*(client(i) for i in range(job["clients"])))
    cpu = time.process_time() - cpu
    last = max(done, default=job["startAt"])
    return {"latencies": latencies, "ttfe": ttfe, "errors": errors, "last": last, "cpu": cpu}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(load(json.loads(sys.argv[1])))))
