"""End to end over a real socket: ``nyla ai ask`` against a small OpenAI-compatible server on
localhost (what Ollama or vLLM would be), configured only through environment variables."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from nyla.sdk import reload_config
from nyla.testing import invoke_cli


class FakeOllama(BaseHTTPRequestHandler):
    bodies: list[dict] = []

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        FakeOllama.bodies.append(body)
        question = body["messages"][-1]["content"]
        answer = f"local answer to: {question}"
        if body.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for piece in (answer[:10], answer[10:]):
                chunk = {"choices": [{"index": 0, "delta": {"content": piece}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            done = {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 6}}
            self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
            return
        payload = json.dumps(
            {
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 12, "completion_tokens": 6},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path, cli_database: str) -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeOllama)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    # the command bills the call and reads the caller's model access: the test's database
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_PRIVATE_LLM_BASE_URL", url)
    monkeypatch.setenv("NYLA_PRIVATE_LLM_MODELS", "llama3.1:8b")
    reload_config()
    FakeOllama.bodies.clear()
    try:
        yield url
    finally:
        httpd.shutdown()
        httpd.server_close()
        reload_config()


def test_ask_reaches_the_private_endpoint_and_neutralizes(server: str) -> None:
    prompt = "who is anna@example.ch?"
    result = invoke_cli(["ai", "ask", prompt, "--model", "private-llm:llama3.1:8b"])
    assert result.exit_code == 0, result.output
    # the server only ever saw the placeholder; the user sees the real address again
    assert FakeOllama.bodies[0]["messages"][-1]["content"] == "who is [EMAIL_1]?"
    assert "local answer to: who is anna@example.ch?" in result.output
    assert "private-llm:llama3.1:8b" in result.output and "0.000000" in result.output

    result = invoke_cli(["ai", "ask", "hello", "--model", "private-llm:llama3.1:8b", "--stream"])
    assert result.exit_code == 0, result.output
    assert "local answer to: hello" in result.output
    assert FakeOllama.bodies[-1]["stream"] is True
