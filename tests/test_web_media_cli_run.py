"""The web and media toolboxes in ``nyla run`` (issue 33: exercised in an agent run through
the CLI): a scripted model behind plugin discovery searches the web, reads the hit's page from
a local site the operator allowed (``NYLA_WEB_ALLOW``) and saves it, speaks its title and
transcribes the audio it made — OpenAI's audio endpoints faked at the wire."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from click.testing import CliRunner

from nyla.cli import cli
from nyla.models.ai import ChatResponse, Role, ToolCall
from nyla.plugins import PluginHost
from nyla.sdk import ModelCapabilities, ModelSpec, OperationType, WebSearchHit
from nyla.testing.provider_wire import sdk_transport
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

pytestmark = pytest.mark.db

PAGE = (
    b"<html><head><title>Opening hours</title></head><body><nav>menu</nav><main>"
    b"<h1>Opening hours</h1><p>Open Monday to Friday, 8 to 17.</p></main></body></html>"
)


class _Site(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hours"
    finally:
        server.shutdown()
        server.server_close()


class Search:
    """A priced web search model answering one hit (the site's page)."""

    id = "search"

    def __init__(self, url: str) -> None:
        self.url = url

    def models(self) -> list[ModelSpec]:
        return [
            ModelSpec(
                id="search:basic",
                provider="search",
                name="basic",
                operation_types=[OperationType.WEB_SEARCH],
                context_window=400,
                max_output_tokens=0,
                price_input_chf_per_mtok=0.0,
                price_output_chf_per_mtok=0.0,
                price_per_call_chf=0.008,
                capabilities=ModelCapabilities(web_search=True),
            )
        ]

    async def chat(self, request):
        raise NotImplementedError

    def stream(self, request):
        raise NotImplementedError

    async def embed(self, model, texts):
        raise NotImplementedError

    async def web_search(self, model, query, max_results=5):
        return [WebSearchHit(url=self.url, title="Opening hours", content="Mon-Fri")]


def openai_audio(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/v1/audio/speech":
        return httpx.Response(200, content=b"ID3fake-mp3", headers={"content-type": "audio/mpeg"})
    assert request.url.path == "/v1/audio/transcriptions"
    body = {"task": "transcribe", "language": "english", "duration": 2.5, "text": "Opening hours"}
    return httpx.Response(200, json={**body, "segments": []})


def script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    calls = [
        ("webSearch", lambda: {"query": "opening hours", "maxResults": 1}),
        ("readUrl", lambda: {"url": results[0].text.splitlines()[1].strip(), "save": True}),
        ("textToSpeech", lambda: {"text": "Opening hours", "name": "hours"}),
        ("speechToText", lambda: {"fileId": re.findall(r"file id: (\S+)", results[2].text)[0]}),
    ]
    if len(results) < len(calls):
        name, args = calls[len(results)]
        return ChatResponse(
            tool_calls=[ToolCall(id=f"c{len(results)}", name=name, arguments=json.dumps(args()))]
        )
    return "Heard: " + results[-1].text


def test_nyla_run_searches_reads_speaks_and_listens(monkeypatch, tmp_path, cli_database, site):
    import nyla_provider_openai
    import nyla_toolbox_media
    import nyla_toolbox_web

    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_USER", "rita")
    monkeypatch.setenv("NYLA_WEB_ALLOW", "127.0.0.1")
    from nyla import config

    config.reload()
    openai = nyla_provider_openai.OpenAIProvider(
        api_key="sk-test", transport=sdk_transport(openai_audio)
    )
    providers = ScriptedPlugin(ScriptedProvider(script), Search(site), openai)
    plugins = [nyla_toolbox_web, nyla_toolbox_media, providers]
    monkeypatch.setattr(
        PluginHost,
        "discover",
        classmethod(lambda cls, **kw: cls.from_plugins(plugins, builtins=True)),
    )
    done = CliRunner().invoke(
        cli, ["run", "When is it open? Say it.", "--json", "--model", "scripted:model"]
    )
    assert done.exit_code == 0, done.output
    events = [json.loads(line) for line in done.output.splitlines() if line.startswith("{")]
    results = [e["data"] for e in events if e["type"] == "TOOL_RESULT"]
    assert [(r["toolName"], r["success"]) for r in results] == [
        ("webSearch", True),
        ("readUrl", True),
        ("textToSpeech", True),
        ("speechToText", True),
    ]
    final = next(e for e in events if e["type"] == "FINAL")["text"]
    assert final == "Heard: Opening hours"
    summary = next(e for e in events if e["type"] == "AGENT_SUMMARY")["data"]
    assert summary["costChf"] >= 0.008 + 13 * 15.0 / 1e6 + 2.5 / 60 * 0.006
