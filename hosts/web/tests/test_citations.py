"""Citations of a host run: the FINAL event and the stored answer cite the knowledge used,
and each citation opens its source — an upload and a local folder's item by a signed link
(no bearer token in the URL), a synced item at the vendor's web address (kept up to date when
the item moves); a file shared by someone else's connection gets no link."""

from __future__ import annotations

import json

import pytest

from nyla import RunContext

from . import test_conversations as conversations
from .test_runs import parse_sse

finished = conversations.finished
# the conversations' fixtures: a scripted model and the memory drive with vendor web addresses
provider, memory_plugin, kernel = (
    conversations.provider,
    conversations.memory_plugin,
    conversations.kernel,
)

pytestmark = pytest.mark.db


async def test_the_final_event_and_the_answer_cite_the_knowledge_used(state, client, token_for):
    alice = await token_for("alice")
    upload = await client.post(
        "/api/files",
        files={"file": ("policy.txt", b"Travel policy: second class trains.", "text/plain")},
        headers=alice,
    )
    item = upload.json()
    files, knowledge = state.kernel.files, state.kernel.knowledge
    stored = await files.get(item["id"], RunContext(user_id="alice", mandate_id="m1"))
    await knowledge.indexing.index_file(
        stored,
        b"Travel policy: second class trains.",
        context=RunContext(user_id="alice", mandate_id="m1"),
    )
    run = await finished(state, client, alice, "What does the travel policy say about trains?")
    events = [
        m for m in parse_sse((await client.get(run["eventsUrl"], headers=alice)).text) if "id" in m
    ]
    final = json.loads(next(m for m in events if m["event"] == "FINAL")["data"])
    (citation,) = final["data"]["citations"]
    assert citation["title"] == "policy.txt" and citation["fileId"] == item["id"]
    assert "Bearer" not in citation["url"] and "nyla_" not in citation["url"]
    opened = await client.get(citation["url"])  # no bearer token: the link is the credential
    assert opened.status_code == 200 and opened.content == b"Travel policy: second class trains."
    shown = (await client.get(f"/api/conversations/{run['conversationId']}", headers=alice)).json()
    (stored_citation,) = shown["messages"][1]["citations"]
    assert stored_citation["title"] == "policy.txt"
    assert (await client.get(stored_citation["url"])).status_code == 200


async def test_a_citation_of_a_synced_item_opens_it_at_the_vendor(
    state, client, token_for, memory_plugin
):
    from .test_sources import _source, _wait_jobs

    alice = await token_for("alice")
    connection_id, ds_id = await _source(client, alice)
    on = await client.patch(
        f"/api/datasources/{ds_id}/rag-index", json={"enabled": True}, headers=alice
    )
    assert on.status_code == 200, on.text
    await _wait_jobs(state, alice, client)
    run = await finished(state, client, alice, "What does the travel policy allow for trains?")
    events = parse_sse((await client.get(run["eventsUrl"], headers=alice)).text)
    final = json.loads(next(m for m in events if m.get("event") == "FINAL")["data"])
    cited = {c["title"]: c for c in final["data"]["citations"]}
    handbook = cited["handbook.txt"]
    assert handbook["url"] == "https://drive.test/docs/handbook.txt?web"
    assert handbook["connectionId"] == connection_id and handbook["path"].endswith("handbook.txt")
    shown = (await client.get(f"/api/conversations/{run['conversationId']}", headers=alice)).json()
    stored = {c["title"]: c for c in shown["messages"][1]["citations"]}
    assert stored["handbook.txt"]["url"] == "https://drive.test/docs/handbook.txt?web"
    # the vendor moved it (same bytes, new address): the next sync updates the address only
    memory_plugin.connector.suffix = "moved"
    synced = await client.post(f"/api/datasources/{ds_id}/sync", headers=alice)
    assert synced.status_code == 202, synced.text
    await _wait_jobs(state, alice, client)
    run = await finished(state, client, alice, "What does the travel policy allow for trains?")
    events = parse_sse((await client.get(run["eventsUrl"], headers=alice)).text)
    final = json.loads(next(m for m in events if m.get("event") == "FINAL")["data"])
    cited = {c["title"]: c["url"] for c in final["data"]["citations"]}
    assert cited["handbook.txt"] == "https://drive.test/docs/handbook.txt?moved"


async def test_a_cited_item_without_a_web_address_opens_by_a_signed_link(
    state, client, token_for, memory_plugin
):
    from .memfs import FILES
    from .test_sources import _source, _wait_jobs

    memory_plugin.connector.suffix = ""  # a local folder: its items have no web address
    alice, bob = await token_for("alice"), await token_for("bob")
    connection_id, ds_id = await _source(client, alice, scope="mandate")
    on = await client.patch(
        f"/api/datasources/{ds_id}/rag-index", json={"enabled": True}, headers=alice
    )
    assert on.status_code == 200, on.text
    await _wait_jobs(state, alice, client)

    run = await finished(state, client, alice, "What does the travel policy allow for trains?")
    events = parse_sse((await client.get(run["eventsUrl"], headers=alice)).text)
    final = json.loads(next(m for m in events if m.get("event") == "FINAL")["data"])
    url = {c["title"]: c["url"] for c in final["data"]["citations"]}["handbook.txt"]
    assert url.startswith(f"/api/connections/{connection_id}/items/download?")
    opened = await client.get(url)  # no bearer token: the signature is the credential
    assert opened.status_code == 200, opened.text
    assert opened.content == FILES["/docs/handbook.txt"]
    assert "attachment" in opened.headers["content-disposition"]
    other_item = url.replace("handbook.txt", "notes.txt")
    assert (await client.get(other_item)).status_code == 403  # the item is signed too

    # bob reads the mandate's index, but the original goes through alice's connection: no link
    run = await finished(state, client, bob, "What does the travel policy allow for trains?")
    events = parse_sse((await client.get(run["eventsUrl"], headers=bob)).text)
    final = json.loads(next(m for m in events if m.get("event") == "FINAL")["data"])
    cited = {c["title"]: c["url"] for c in final["data"]["citations"]}
    assert "handbook.txt" in cited and cited["handbook.txt"] is None

    removed = await client.delete(f"/api/connections/{connection_id}", headers=alice)
    assert removed.status_code == 200
    assert (await client.get(url)).status_code == 404  # a link outlives no connection
