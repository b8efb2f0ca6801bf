"""``nyla run`` / ``nyla runs``: the no-model message, and a whole offline run against the
private-LLM provider pointed at a local OpenAI-compatible server (real HTTP on localhost)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from click.testing import CliRunner

from nyla.cli import cli
from nyla.testing.processes import http_server_thread


def test_run_without_a_model_says_how_to_configure_one(monkeypatch, tmp_path):
    monkeypatch.setenv("NYLA_PLUGINS", "none")  # only the kernel's built-ins
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    from nyla import config

    config.reload()
    result = CliRunner().invoke(cli, ["run", "hello"])
    assert result.exit_code == 1
    assert "no model is configured" in result.output
    assert "NYLA_PRIVATE_LLM_BASE_URL" in result.output and "OPENAI_API_KEY" in result.output


class ChatCompletions(BaseHTTPRequestHandler):
    """Chat completions the way an OpenAI-compatible server answers: a tool call first, then
    text; streamed as server-sent events when asked."""

    requests: list[dict] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        answered = any(m["role"] == "tool" for m in body["messages"])
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "tiny"}
        if not answered:
            args = json.dumps({"name": "hello.txt", "content": "hi"})
            delta = {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "writeFile", "arguments": args},
                    }
                ],
            }
            chunks = [delta]
            finish = "tool_calls"
        else:
            chunks = [{"role": "assistant", "content": "Wrote "}, {"content": "hello.txt."}]
            finish = "stop"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for delta in chunks:
            event = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        last = {
            **base,
            "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
        }
        self.wfile.write(f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n".encode())


@pytest.fixture
def local_llm() -> Iterator[str]:
    with http_server_thread(ChatCompletions) as base:
        yield f"{base}/v1"


def test_run_offline_against_a_local_openai_compatible_server(
    monkeypatch, tmp_path, local_llm, cli_database
):
    pytest.importorskip("nyla_provider_private_llm")
    monkeypatch.setenv("NYLA_PLUGINS", "private-llm")
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_PRIVATE_LLM_BASE_URL", local_llm)
    monkeypatch.setenv("NYLA_PRIVATE_LLM_MODELS", "tiny")
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    from nyla import config

    config.reload()
    ChatCompletions.requests.clear()
    runner = CliRunner()
    result = runner.invoke(cli, ["run", "Write hello.txt", "--max-rounds", "5"])
    assert result.exit_code == 0, result.output
    assert "Wrote hello.txt." in result.output
    assert "completed" in result.output and "private-llm:tiny" in result.output
    sent_tools = {t["function"]["name"] for t in ChatCompletions.requests[0]["tools"]}
    assert {"writeFile", "readFile", "summarizeContent"} <= sent_tools

    listed = runner.invoke(cli, ["runs", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    runs = json.loads(listed.output)
    assert [r["status"] for r in runs] == ["completed"] and runs[0]["toolCalls"] == 1
    shown = runner.invoke(cli, ["runs", "show", runs[0]["runId"], "--json"])
    trace = json.loads(shown.output)
    assert [c["toolName"] for c in trace["toolCalls"]] == ["writeFile"]
    assert trace["finalText"] == "Wrote hello.txt."

    lines = runner.invoke(cli, ["run", "Write hello.txt", "--json"]).output.splitlines()
    events = [json.loads(line) for line in lines]
    assert events[0]["type"] == "STATUS" and events[-1]["type"] == "AGENT_SUMMARY"
    assert runner.invoke(cli, ["runs", "show", "nope"]).exit_code == 1


def test_run_acts_as_the_one_default_user(monkeypatch, tmp_path, local_llm, cli_database):
    pytest.importorskip("nyla_provider_private_llm")
    monkeypatch.setenv("NYLA_PLUGINS", "private-llm")
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_PRIVATE_LLM_BASE_URL", local_llm)
    monkeypatch.setenv("NYLA_PRIVATE_LLM_MODELS", "tiny")
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_USER", "erin")
    monkeypatch.setenv("USER", "somebody-else")
    from nyla import config

    config.reload()
    runner = CliRunner()
    result = runner.invoke(cli, ["run", "Write hello.txt", "--max-rounds", "5"])
    assert result.exit_code == 0, result.output
    assert "as user erin" in result.output
    mine = json.loads(runner.invoke(cli, ["runs", "list", "--user", "erin", "--json"]).output)
    assert len(mine) == 1
    assert (
        json.loads(runner.invoke(cli, ["runs", "list", "--user", "somebody-else", "--json"]).output)
        == []
    )


def test_run_errors_are_json_under_json(monkeypatch, tmp_path):
    monkeypatch.setenv("NYLA_PLUGINS", "none")
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    from nyla import config

    config.reload()
    result = CliRunner().invoke(cli, ["run", "hello", "--json"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert "no model is configured" in error["message"]


def test_one_budget_flag_name_everywhere():
    from nyla.agent.cli import run
    from nyla.ai.cli import ask
    from nyla.eval.cli import run as eval_run

    for command in (run, ask, eval_run):
        flags = {opt for p in command.params for opt in p.opts}
        assert "--max-cost-chf" in flags, command.name
        assert "--max-cost" not in flags, command.name


def test_run_detach_queues_for_a_worker_and_runs_follow_prints_its_events(
    monkeypatch, tmp_path, local_llm, cli_database
):
    pytest.importorskip("nyla_provider_private_llm")
    monkeypatch.setenv("NYLA_PLUGINS", "private-llm")
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_PRIVATE_LLM_BASE_URL", local_llm)
    monkeypatch.setenv("NYLA_PRIVATE_LLM_MODELS", "tiny")
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    from nyla import config

    config.reload()
    runner = CliRunner()
    refused = runner.invoke(cli, ["run", "Write hello.txt", "--detach"])
    assert refused.exit_code == 1 and "NYLA_JOBS=procrastinate" in refused.output
    monkeypatch.setenv("NYLA_JOBS", "procrastinate")
    queued = runner.invoke(cli, ["run", "Write hello.txt", "--detach", "--json"])
    assert queued.exit_code == 0, queued.output
    run_id = json.loads(queued.stdout)["runId"]
    assert json.loads(queued.stdout)["status"] == "queued"

    async def work() -> str | None:  # what the worker's task does with the queued job
        from nyla.kernel import Kernel

        kernel = Kernel()
        try:
            return await kernel.runs.drive(run_id)
        finally:
            await kernel.aclose()

    import asyncio

    assert asyncio.run(work()) == "completed"
    followed = runner.invoke(cli, ["runs", "follow", run_id, "--json"])
    assert followed.exit_code == 0, followed.output
    events = [json.loads(line) for line in followed.stdout.splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "STATUS" and events[-1]["type"] == "AGENT_SUMMARY"
    tail = runner.invoke(cli, ["runs", "follow", run_id, "--after", str(len(events) - 1)])
    assert tail.exit_code == 0 and "completed" in tail.output
    assert runner.invoke(cli, ["runs", "follow", "nope"]).exit_code == 1
