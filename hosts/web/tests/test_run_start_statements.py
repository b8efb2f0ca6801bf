"""What starting a run costs the database, pinned: ``POST /api/runs`` sends a fixed number of
statements (counted at psycopg, every pool), reads the caller's grants and model allow-list
once, and the run's first statement is the write of its first event. A count that grows
back fails here; it does not depend on timing."""

from __future__ import annotations

import asyncio

import pytest

from .conftest import wait_run
from .statements import recording

pytestmark = pytest.mark.db

#: ``POST /api/runs`` for a new conversation, the caller's token already verified: the
#: model allow-list, the grants, the conversation, the prompt (4 in one transaction) and the
#: run's row (one autocommit statement); BEGIN/COMMIT around the three of them that run in
#: the kernel's sessions. The connections are kept in the process since the warm-up run
#: (read again when the table changes: nyla.table_changes). It was 37 (9 pool pings, the
#: grants and the allow-list read twice, the new conversation read back, the run's row in a
#: session), then 17 (the connections in a session), then 15 (the connections one statement).
POST_STATEMENTS = {"QUERY": 8, "BEGIN": 3, "COMMIT": 3}


async def test_starting_a_run_sends_a_pinned_number_of_statements(state, client, token_for):
    headers = await token_for("alice")
    warm = await client.post("/api/runs", json={"prompt": "hi"}, headers=headers)
    await wait_run(state, warm.json()["runId"])  # the token verified, statements prepared
    request = asyncio.current_task()
    with recording() as rec:
        response = await client.post("/api/runs", json={"prompt": "hello"}, headers=headers)
        assert response.status_code == 202, response.text
        await wait_run(state, response.json()["runId"])
    posted = rec.of(request)
    assert rec.counts(posted) == POST_STATEMENTS, [s.sql[:60] for s in posted]
    sql = [" ".join(s.sql.split()) for s in posted]
    assert sum("FROM service_access " in q for q in sql) == 1  # the grants, once
    assert sum("FROM ai_model_allow_list " in q for q in sql) == 1  # the allow-list, once
    run = [s for s in rec.statements if s.task is not request]
    assert run and "INSERT INTO host_run_events" in run[0].sql  # the first event's write


async def test_a_run_start_without_service_agent_reads_the_grants_once_and_stores_nothing(
    state, client, token_for
):
    await state.kernel.service_access.set("user", "bob", "service.agent", False)
    headers = await token_for("bob")
    await client.get("/api/me", headers=headers)  # the token verified
    request = asyncio.current_task()
    with recording() as rec:
        response = await client.post("/api/runs", json={"prompt": "hello"}, headers=headers)
    assert response.status_code == 403 and response.json()["permission"] == "service.agent"
    posted = rec.of(request)
    assert not [s for s in posted if s.sql.startswith("INSERT")]
    assert sum("FROM service_access " in " ".join(s.sql.split()) for s in posted) == 1


async def test_a_stream_of_a_run_this_process_drives_is_checked_without_a_statement(state):
    from nyla_host.identity import Identity, Role
    from nyla_host.runs import RunNotFound, _LiveRun

    alice = Identity(user_id="alice", mandate_id="m1", role=Role.USER)
    bob = Identity(user_id="bob", mandate_id="m1", role=Role.USER)
    with pytest.raises(RunNotFound):  # the read pool's first connection opened
        await state.runs.check_visible("r0", alice)
    state.runs._live["r1"] = _LiveRun(run_id="r1", user_id="alice")
    with recording() as rec:
        await state.runs.check_visible("r1", alice)
        with pytest.raises(RunNotFound):
            await state.runs.check_visible("r1", bob)
    assert rec.statements == []
    with recording() as rec, pytest.raises(RunNotFound):  # not driven here: read
        await state.runs.check_visible("r2", alice)
    assert rec.counts() == {"QUERY": 1}
