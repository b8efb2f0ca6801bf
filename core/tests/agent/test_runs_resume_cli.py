"""``nyla runs resume RUN_ID``: an interrupted durable run runs again from the command line,
as a new run in its conversation, with the same refusals as the web host's resume (unknown
run, another user's, one that was not interrupted, unfinished writes not confirmed)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from click.testing import CliRunner

from nyla.cli import cli
from nyla.testing.processes import http_server_thread


class Answers(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that answers every chat with streamed text."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "tiny"}
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for delta, finish in (({"role": "assistant", "content": "Booked."}, None), ({}, "stop")):
            chunk = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


@pytest.fixture
def local_llm() -> Iterator[str]:
    with http_server_thread(Answers) as base:
        yield f"{base}/v1"


async def _recorded(status: str, writes: list[dict] | None = None) -> str:
    """A durable run of alice in the conversation ``conv-1`` that ended ``status`` (an
    interrupted one with its closing ERROR naming ``writes``); its id."""
    from nyla.host import StoredRun, StoredRunEvent
    from nyla.kernel import Kernel
    from nyla.models.agent import AgentConfig, RunContext

    kernel = Kernel()
    try:
        context = RunContext(user_id="alice", workflow_id="conv-1")
        row = await kernel.runs.create("book the room", AgentConfig(max_rounds=3), context)
        async with kernel.db.session() as s:
            stored = await s.get(StoredRun, row.run_id)
            stored.status, stored.worker, stored.last_seq = status, None, 1
            payload = {
                "seq": 1,
                "type": "ERROR",
                "runId": row.run_id,
                "text": "the server stopped during the run",
                "data": {"status": status, "unfinishedWrites": writes or []},
            }
            s.add(StoredRunEvent(run_id=row.run_id, seq=1, type="ERROR", payload=payload))
        return row.run_id
    finally:
        await kernel.aclose()


async def _conversation_of(run_id: str) -> str | None:
    from nyla.kernel import Kernel

    kernel = Kernel()
    try:
        return await kernel.files.workflows.workflow_of_run(run_id)
    finally:
        await kernel.aclose()


async def _run_ids() -> list[str]:
    from nyla.kernel import Kernel

    kernel = Kernel()
    try:
        sql = "SELECT run_id FROM host_runs ORDER BY run_id"
        return [r[0] for r in await kernel.db.read_driver(lambda conn: conn.rows(sql, ()))]
    finally:
        await kernel.aclose()


@pytest.fixture
def configured(monkeypatch, tmp_path, local_llm, cli_database) -> None:
    pytest.importorskip("nyla_provider_private_llm")
    monkeypatch.setenv("NYLA_PLUGINS", "private-llm")
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_PRIVATE_LLM_BASE_URL", local_llm)
    monkeypatch.setenv("NYLA_PRIVATE_LLM_MODELS", "tiny")
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.delenv("NYLA_JOBS", raising=False)
    from nyla import config

    config.reload()


def test_runs_resume_refuses_what_it_may_not_resume(configured):
    running = asyncio.run(_recorded("running"))
    left_writes = asyncio.run(
        _recorded("interrupted", [{"callId": "c9", "toolName": "bookRoom", "round": 1}])
    )
    runner = CliRunner()

    unknown = runner.invoke(cli, ["runs", "resume", "nope", "--user", "alice"])
    assert unknown.exit_code == 1 and "no run 'nope'" in unknown.output
    stranger = runner.invoke(cli, ["runs", "resume", left_writes, "--user", "bob"])
    assert stranger.exit_code == 1 and "belongs to another user" in stranger.output
    too_early = runner.invoke(cli, ["runs", "resume", running, "--user", "alice"])
    assert too_early.exit_code == 1 and "is running" in too_early.output
    unconfirmed = runner.invoke(cli, ["runs", "resume", left_writes, "--user", "alice"])
    assert unconfirmed.exit_code == 1
    assert "bookRoom (call c9)" in unconfirmed.output and "--confirm-writes" in unconfirmed.output
    assert asyncio.run(_run_ids()) == sorted([running, left_writes])  # refusals start nothing


def test_runs_resume_runs_it_again_in_its_conversation(configured):
    run_id = asyncio.run(
        _recorded("interrupted", [{"callId": "c9", "toolName": "bookRoom", "round": 1}])
    )
    runner = CliRunner()
    resumed = runner.invoke(
        cli, ["runs", "resume", run_id, "--user", "alice", "--confirm-writes", "--json"]
    )
    assert resumed.exit_code == 0, resumed.output
    events = [json.loads(line) for line in resumed.stdout.splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    new_id = events[0]["runId"]
    assert new_id != run_id and {e["runId"] for e in events} == {new_id}
    assert events[-1]["type"] == "AGENT_SUMMARY" and events[-1]["data"]["status"] == "completed"
    assert any(e["type"] == "FINAL" and e["text"] == "Booked." for e in events)
    assert asyncio.run(_conversation_of(new_id)) == "conv-1"
    # an ended run is not resumed twice; its successor is not interrupted either
    again = runner.invoke(cli, ["runs", "resume", new_id, "--user", "alice"])
    assert again.exit_code == 1 and "is completed" in again.output


def test_runs_resume_shows_progress_for_people(configured, monkeypatch):
    run_id = asyncio.run(_recorded("interrupted"))
    monkeypatch.setenv("NYLA_USER", "alice")
    resumed = CliRunner().invoke(cli, ["runs", "resume", run_id])
    assert resumed.exit_code == 0, resumed.output
    assert f"resumes {run_id}" in resumed.stderr
    assert "Booked." in resumed.stdout and ": completed" in resumed.stderr
