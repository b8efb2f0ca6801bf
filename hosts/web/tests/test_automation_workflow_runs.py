"""``/api/automation2/workflows/{id}/runs``: a run started over the API goes on by itself,
streams its stored events as SSE (ids in order, resumable, closed by ``end``), shows its
nodes; a workflow that cannot run is a 422 naming its problems; another user's run is a
404 everywhere."""

from __future__ import annotations

import json

import pytest

from .test_runs import parse_sse

pytestmark = pytest.mark.db

BASE = "/api/automation2/workflows"
GRAPH = {
    "name": "Digest",
    "nodes": [
        {"id": "clean", "method": "context", "action": "neutralizeData",
         "parameters": {"text": "Ana Muster called about the invoice."}},
        {"id": "sum", "method": "ai", "action": "process", "parameters": {}},
    ],
    "connections": [{"fromNode": "clean", "toNode": "sum", "toParameter": "prompt"}],
}  # fmt: skip


async def workflow(client, headers, graph=GRAPH) -> str:
    wf_id = (await client.post(BASE, json={"name": "W"}, headers=headers)).json()["id"]
    saved = await client.put(f"{BASE}/{wf_id}", json=graph, headers=headers)
    assert saved.status_code == 200, saved.text
    return wf_id


async def test_a_run_streams_its_events_and_shows_its_nodes(client, token_for):
    alice = await token_for("alice")
    wf_id = await workflow(client, alice)
    started = await client.post(f"{BASE}/{wf_id}/runs", json={"maxAttempts": 1}, headers=alice)
    assert started.status_code == 202, started.text
    run = started.json()
    assert run["workflowId"] == wf_id and run["options"]["maxAttempts"] == 1
    assert run["eventsUrl"] == f"{BASE}/{wf_id}/runs/{run['id']}/events"
    streamed = await client.get(run["eventsUrl"], headers=alice)
    assert streamed.headers["content-type"].startswith("text/event-stream")
    messages = parse_sse(streamed.text)
    events = [m for m in messages if "id" in m]
    assert [int(m["id"]) for m in events] == list(range(1, len(events) + 1))
    assert [(m["event"], json.loads(m["data"])["nodeId"]) for m in events] == [
        ("RUN_QUEUED", None),
        ("RUN_STARTED", None),
        ("NODE_STARTED", "clean"),
        ("NODE_DONE", "clean"),
        ("NODE_STARTED", "sum"),
        ("NODE_DONE", "sum"),
        ("RUN_DONE", None),
    ]
    assert messages[-1]["event"] == "end"
    assert json.loads(messages[-1]["data"]) == {
        "runId": run["id"],
        "status": "done",
        "lastEventId": len(events),
    }
    shown = (await client.get(f"{BASE}/{wf_id}/runs/{run['id']}", headers=alice)).json()
    assert [(n["nodeId"], n["status"], n["attempts"]) for n in shown["nodes"]] == [
        ("clean", "done", 1),
        ("sum", "done", 1),
    ]
    cleaned = shown["nodes"][0]["output"]["text"]
    assert shown["nodes"][1]["inputs"]["prompt"] == cleaned and "invoice" in cleaned
    assert shown["costChf"] > 0  # the ai.process node's model call, priced
    resumed = await client.get(run["eventsUrl"], headers={**alice, "Last-Event-ID": "5"})
    assert [m["id"] for m in parse_sse(resumed.text) if "id" in m] == ["6", "7"]
    listed = (await client.get(f"{BASE}/{wf_id}/runs", headers=alice)).json()["runs"]
    assert [r["id"] for r in listed] == [run["id"]]
    cancel = await client.post(f"{BASE}/{wf_id}/runs/{run['id']}/cancel", headers=alice)
    assert cancel.json() == {"runId": run["id"], "cancelled": False}


async def test_refusals(client, token_for):
    alice, bob = await token_for("alice"), await token_for("bob")
    wf_id = await workflow(client, alice)
    run = (await client.post(f"{BASE}/{wf_id}/runs", headers=alice)).json()
    url = f"{BASE}/{wf_id}/runs/{run['id']}"
    await client.get(f"{url}/events", headers=alice)  # until it ended
    assert (await client.get(url, headers=bob)).status_code == 404
    assert (await client.get(f"{url}/events", headers=bob)).status_code == 404
    assert (await client.post(f"{url}/cancel", headers=bob)).status_code == 404
    assert (await client.post(f"{BASE}/{wf_id}/runs", headers=bob)).status_code == 404
    assert (await client.get(f"{BASE}/{wf_id}/runs", headers=bob)).status_code == 404
    other = await workflow(client, alice)
    assert (await client.get(f"{BASE}/{other}/runs/{run['id']}", headers=alice)).status_code == 404
    bad = await client.get(f"{url}/events", headers={**alice, "Last-Event-ID": "x"})
    assert bad.status_code == 400
    unfinished = {**GRAPH, "connections": []}
    broken = await workflow(client, alice, unfinished)
    refused = await client.post(f"{BASE}/{broken}/runs", headers=alice)
    assert refused.status_code == 422
    detail = refused.json()["detail"]
    assert [(p["node"], p["code"]) for p in detail["problems"]] == [("sum", "MISSING_PARAMETER")]
    bad_options = await client.post(f"{BASE}/{wf_id}/runs", json={"maxAttempts": 0}, headers=alice)
    assert bad_options.status_code == 422
    assert (await client.get(f"{BASE}/{wf_id}/runs", headers={})).status_code == 401
