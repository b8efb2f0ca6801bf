"""The web and media toolboxes in a host run: a user uploads an image through
``POST /api/files`` and asks through ``POST /api/runs``; a scripted model has the image
described (the vision call gets the uploaded bytes) and reads a page of a local site the
operator allowed; the run streams both tool results and the page is saved into the
conversation as a chat document. A second run searches the web, speaks and transcribes."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

import nyla_host.tables  # noqa: F401  (host tables are created with the kernel's)
from nyla import RunContext
from nyla.sdk import (
    ChatResponse,
    ImagePart,
    ModelCapabilities,
    ModelSpec,
    OperationType,
    Role,
    ToolCall,
    WebSearchHit,
)
from nyla.testing.provider_wire import sdk_transport
from nyla.testing.scripted import ScriptedPlugin

pytestmark = pytest.mark.db

PAGE = b"<html><title>Menu</title><body><main><p>Soup of the day: barley.</p></main></body></html>"


class _Site(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
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
        yield f"http://127.0.0.1:{server.server_address[1]}/menu"
    finally:
        server.shutdown()
        server.server_close()


def _png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 32), "navy").save(out, format="PNG")
    return out.getvalue()


def _script_for(url: str):
    def script(request, index):
        images = [
            p
            for m in request.messages
            if isinstance(m.content, list)
            for p in m.content
            if isinstance(p, ImagePart)
        ]
        if images:
            size = len(base64.b64decode(images[0].data_base64))
            return f"A navy rectangle ({size} bytes)."
        results = [m for m in request.messages if m.role is Role.TOOL]
        if not results:
            file_id = re.findall(r"file (\S+)\.", request.messages[-1].text)[0]
            return ChatResponse(
                tool_calls=[
                    ToolCall(
                        id="d", name="describeImage", arguments=json.dumps({"fileId": file_id})
                    )
                ]
            )
        if len(results) == 1:
            args = {"url": url, "save": True}
            return ChatResponse(
                tool_calls=[ToolCall(id="r", name="readUrl", arguments=json.dumps(args))]
            )
        soup = next(line for line in results[1].text.splitlines() if "Soup" in line)
        return f"{results[0].text} | {soup}"

    return script


async def test_a_host_run_describes_an_upload_and_reads_a_page(
    db, make_kernel, scripted, tmp_path, site, monkeypatch
):
    import nyla_toolbox_media
    import nyla_toolbox_web
    from nyla_host.app import bare_app, build_state, mount, shutdown, startup
    from nyla_host.state import HostSettings

    monkeypatch.setenv("NYLA_WEB_ALLOW", "127.0.0.1")
    kernel = make_kernel(
        nyla_toolbox_web,
        nyla_toolbox_media,
        scripted(_script_for(site)),
        db=db,
        settings={"data_dir": tmp_path},
    )
    state = build_state(kernel, settings=HostSettings(default_model="scripted:model"))
    await startup(state)
    try:
        app = bare_app()
        mount(app, state)
        token, _ = await state.tokens.create("alice", role="user", mandate_id="m1")
        headers = {"Authorization": f"Bearer {token}"}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://host.test") as client:
            image = _png()
            uploaded = await client.post(
                "/api/files", files={"file": ("box.png", image, "image/png")}, headers=headers
            )
            assert uploaded.status_code == 201, uploaded.text
            file_id = uploaded.json()["id"]
            prompt = f"What is in file {file_id}. And what is the soup?"
            started = await client.post("/api/runs", json={"prompt": prompt}, headers=headers)
            assert started.status_code == 202, started.text
            run = started.json()
            live = state.runs._live.get(run["runId"])
            if live is not None and live.task is not None:
                await asyncio.wait_for(asyncio.shield(live.task), 60)
            body = (await client.get(run["eventsUrl"], headers=headers)).text
            events = [
                json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")
            ]
            results = [e["data"] for e in events if e.get("type") == "TOOL_RESULT"]
            assert [(r["toolName"], r["success"]) for r in results] == [
                ("describeImage", True),
                ("readUrl", True),
            ]
            final = next(e for e in events if e.get("type") == "FINAL")
            assert (
                final["text"]
                == f"A navy rectangle ({len(image)} bytes). | Soup of the day: barley."
            )
            context = RunContext(user_id="alice", mandate_id="m1")
            workflow = await kernel.files.workflows.load(run["conversationId"], context)
            assert [d.file_name for d in workflow.documents()] == ["Menu.md"]
    finally:
        await shutdown(state)


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
        return [WebSearchHit(url=self.url, title="Menu", content="Soup")]


def _audio(request: httpx.Request) -> httpx.Response:
    """OpenAI's audio endpoints, shaped like their documented answers; nothing else."""
    if request.url.path == "/v1/audio/speech":
        return httpx.Response(200, content=b"ID3fake-mp3", headers={"content-type": "audio/mpeg"})
    if request.url.path == "/v1/audio/transcriptions":
        body = {"task": "transcribe", "language": "english", "duration": 1.5, "text": "Barley"}
        return httpx.Response(200, json={**body, "segments": []})
    return httpx.Response(404, json={"error": {"message": "not here", "type": "invalid"}})


def _speech_script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    calls = [
        ("webSearch", lambda: {"query": "soup of the day", "maxResults": 1}),
        ("textToSpeech", lambda: {"text": "Barley", "name": "soup"}),
        ("speechToText", lambda: {"fileId": re.findall(r"file id: (\S+)", results[1].text)[0]}),
    ]
    if len(results) < len(calls):
        name, args = calls[len(results)]
        return ChatResponse(
            tool_calls=[ToolCall(id=f"c{len(results)}", name=name, arguments=json.dumps(args()))]
        )
    return f"{results[0].text.splitlines()[1].strip()} | Heard: {results[-1].text}"


async def test_a_host_run_searches_speaks_and_listens(db, make_kernel, scripted, tmp_path, site):
    """webSearch over a priced search model, textToSpeech and speechToText over OpenAI's
    audio endpoints faked at the wire, in one run through ``POST /api/runs``; the spoken file
    is a chat document of the conversation."""
    import nyla_provider_openai
    import nyla_toolbox_media
    import nyla_toolbox_web
    from nyla_host.app import bare_app, build_state, mount, shutdown, startup
    from nyla_host.state import HostSettings

    openai = nyla_provider_openai.OpenAIProvider(api_key="sk-test", transport=sdk_transport(_audio))
    providers = ScriptedPlugin(scripted(_speech_script), Search(site), openai)
    kernel = make_kernel(
        nyla_toolbox_web, nyla_toolbox_media, providers, db=db, settings={"data_dir": tmp_path}
    )
    state = build_state(kernel, settings=HostSettings(default_model="scripted:model"))
    await startup(state)
    try:
        app = bare_app()
        mount(app, state)
        token, _ = await state.tokens.create("alice", role="user", mandate_id="m1")
        headers = {"Authorization": f"Bearer {token}"}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://host.test") as client:
            prompt = "Find the soup of the day and say it."
            started = await client.post("/api/runs", json={"prompt": prompt}, headers=headers)
            assert started.status_code == 202, started.text
            run = started.json()
            live = state.runs._live.get(run["runId"])
            if live is not None and live.task is not None:
                await asyncio.wait_for(asyncio.shield(live.task), 60)
            body = (await client.get(run["eventsUrl"], headers=headers)).text
            events = [
                json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")
            ]
            results = [e["data"] for e in events if e.get("type") == "TOOL_RESULT"]
            assert [(r["toolName"], r["success"]) for r in results] == [
                ("webSearch", True),
                ("textToSpeech", True),
                ("speechToText", True),
            ]
            final = next(e for e in events if e.get("type") == "FINAL")
            assert final["text"] == f"{site} | Heard: Barley"
            context = RunContext(user_id="alice", mandate_id="m1")
            workflow = await kernel.files.workflows.load(run["conversationId"], context)
            assert [d.file_name for d in workflow.documents()] == ["soup.mp3"]
    finally:
        await shutdown(state)
