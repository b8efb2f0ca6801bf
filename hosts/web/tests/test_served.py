"""``nyla serve`` as a real process on loopback: SSE over HTTP (live chunks, pings), and a
server killed mid-run whose run is ``interrupted`` (never ``running`` forever) at the next
boot, with its jobs recovered."""

from __future__ import annotations

import httpx
import pytest
import pytest_asyncio

from nyla.host import JobStore

from .served import Served

pytestmark = [pytest.mark.db, pytest.mark.slow]


@pytest_asyncio.fixture
async def served(embedded_pg, tmp_path):
    server = Served(embedded_pg, tmp_path)
    try:
        yield server
    finally:
        server.stop()
        await server.drop()


async def test_killed_server_marks_the_run_interrupted_at_next_boot(served):
    token = await served.prepare()
    served.start(delay_s=0.5)  # a long answer: the run is certainly mid-way when killed
    headers = {"Authorization": f"Bearer {token}", "X-User-Timezone": "Europe/Zurich"}
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as client:
        run = (
            await client.post("/api/runs", json={"prompt": "a long story"}, headers=headers)
        ).json()
        lines = []
        async with client.stream("GET", run["eventsUrl"], headers=headers) as response:
            assert response.headers["x-accel-buffering"] == "no"
            async for line in response.aiter_lines():
                lines.append(line)
                if line == "event: CHUNK":
                    break
        assert ": ping" in lines  # the model was silent for longer than the ping period
        assert lines[lines.index("event: CHUNK") - 1].startswith("id: ")
        # a sync job of this server, held before its first page (no release file)
        conn = await client.post("/api/connections", json={"service": "memfs"}, headers=headers)
        ds = await client.post(
            "/api/datasources",
            json={"connectionId": conn.json()["id"], "path": "/docs"},
            headers=headers,
        )
        on = await client.patch(
            f"/api/datasources/{ds.json()['id']}/rag-index", json={"enabled": True}, headers=headers
        )
        job_id = on.json()["jobId"]
        running = (await client.get("/api/rag/inventory/jobs", headers=headers)).json()["jobs"]
        assert [j["id"] for j in running] == [job_id]

        served.kill()
        served.start()

        shown = (await client.get(f"/api/runs/{run['runId']}", headers=headers)).json()
        assert shown["status"] == "interrupted" and shown["finishedAt"]
        replay = (await client.get(run["eventsUrl"], headers=headers)).text
        assert "event: ERROR" in replay and '"status": "interrupted"' in replay
        assert (await client.get("/api/rag/inventory/jobs", headers=headers)).json()["jobs"] == []
        assert replay.rstrip().endswith(
            f'"status": "interrupted", "lastEventId": {shown["lastEventId"]}}}'
        )
    db = served.database()
    try:
        jobs = await JobStore(db).finished(user_id="alice")
    finally:
        await db.dispose()
    assert [(j.id, j.status) for j in jobs] == [(job_id, "error")]
