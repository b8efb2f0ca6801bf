"""The documents toolbox in a host run: a user asks through ``POST /api/runs``, a scripted
model uploads nothing but calls ``createChart`` and ``renderDocument`` (the chart embedded
by ``file:<id>``), the run streams both tool results, the conversation holds the produced
files as chat documents, and the PDF downloads through the host's file route and extracts
again with the same heading and table. A second run reads a section of a file indexed first
and exercises the other document tools."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import re

import httpx
import pytest

import nyla_host.tables  # noqa: F401  (host tables are created with the kernel's)
from nyla import RunContext
from nyla.sdk import ChatResponse, Role, ToolCall
from nyla.testing.provider_wire import sdk_transport
from nyla.testing.scripted import ScriptedPlugin

pytestmark = pytest.mark.db

CHART = {"kind": "pie", "labels": ["a", "b"], "series": [{"values": [3, 1]}], "formats": ["png"]}
REPORT = (
    "# Split\n\n| Part | Share |\n|---|---|\n| a | 75% |\n| b | 25% |\n\n![pie](file:{chart})\n"
)


def _script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        return ChatResponse(
            tool_calls=[ToolCall(id="c", name="createChart", arguments=json.dumps(CHART))]
        )
    if len(results) == 1:
        chart = re.findall(r"file id: (\S+)", results[0].text)[0]
        args = {"markdown": REPORT.format(chart=chart), "formats": ["pdf"], "name": "split"}
        return ChatResponse(
            tool_calls=[ToolCall(id="r", name="renderDocument", arguments=json.dumps(args))]
        )
    return "Here is the report."


async def test_a_host_run_renders_a_report_the_user_downloads(db, make_kernel, scripted, tmp_path):
    import nyla_toolbox_documents
    from nyla_host.app import bare_app, build_state, mount, shutdown, startup
    from nyla_host.state import HostSettings
    from nyla_toolbox_documents.extract import extract

    kernel = make_kernel(
        nyla_toolbox_documents, scripted(_script), db=db, settings={"data_dir": tmp_path}
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
            started = await client.post(
                "/api/runs", json={"prompt": "Chart the split as a PDF"}, headers=headers
            )
            assert started.status_code == 202, started.text
            run = started.json()
            live = state.runs._live.get(run["runId"])
            if live is not None and live.task is not None:
                await asyncio.wait_for(asyncio.shield(live.task), 60)
            body = (await client.get(run["eventsUrl"], headers=headers)).text
            results = [
                json.loads(line[6:])["data"]
                for line in body.splitlines()
                if line.startswith("data: ") and '"TOOL_RESULT"' in line
            ]
            assert [(r["toolName"], r["success"]) for r in results] == [
                ("createChart", True),
                ("renderDocument", True),
            ]
            context = RunContext(user_id="alice", mandate_id="m1")
            workflow = await kernel.files.workflows.load(run["conversationId"], context)
            documents = {d.file_name: d.file_id for d in workflow.documents()}
            assert sorted(documents) == ["chart.png", "split.pdf"]
            pdf = await client.get(f"/api/files/{documents['split.pdf']}/content", headers=headers)
            assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")
    finally:
        await shutdown(state)
    back = extract("split.pdf", pdf.content).udm
    assert [b.text for b in back.blocks() if b.type == "heading"] == ["Split"]
    tables = [(b.header, b.rows) for b in back.blocks() if b.type == "table"]
    assert tables == [(["Part", "Share"], [["a", "75%"], ["b", "25%"]])]
    assert [b.type for b in back.blocks()].count("image") == 1


GUIDE = b"""# Guide

Intro.

## Setup

| Disk | Free |
|---|---|
| sda | 40% |

## Usage

Run nyla with --fast.
"""

UDM = {
    "kind": "markdown",
    "title": "Spec",
    "children": [
        {"type": "heading", "level": 1, "text": "Spec"},
        {"type": "image", "alt": "logo", "src": "file:abc"},
    ],
}


def _reading_script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    prompt = next(m for m in request.messages if m.role is Role.USER)
    file_id = prompt.text.split()[-1]
    calls = [
        ("readSection", {"fileId": file_id, "section": "Guide > Usage"}),
        ("browseContainer", {"fileId": file_id}),
        ("readContentObjects", {"fileId": file_id, "refs": ["table 1"]}),
        ("extractContainerItem", {"fileId": file_id, "ref": "table 1"}),
        ("getUdmStructure", {"udm": UDM}),
        ("walkUdmBlocks", {"udm": UDM}),
        ("filterUdmByType", {"udm": UDM, "types": ["image"]}),
        ("generateImage", {"prompt": "a disk", "name": "disk"}),
    ]
    if len(results) < len(calls):
        name, args = calls[len(results)]
        return ChatResponse(
            tool_calls=[ToolCall(id=f"c{len(results)}", name=name, arguments=json.dumps(args))]
        )
    return "Section: " + results[0].text.splitlines()[-1]


def _embed(texts: list[str]) -> list[list[float]]:
    """A deterministic 8-dimension embedding (indexing needs one; nothing here searches)."""
    return [
        [b / 255 + 0.01 for b in hashlib.blake2b(t.encode(), digest_size=8).digest()] for t in texts
    ]


def _images(request: httpx.Request) -> httpx.Response:
    """OpenAI's ``POST /v1/images/generations`` answering one PNG as ``b64_json``; nothing
    else (the run's memory embeds without OpenAI then)."""
    if request.url.path != "/v1/images/generations":
        return httpx.Response(404, json={"error": {"message": "not here", "type": "invalid"}})
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8), "teal").save(out, format="PNG")
    png = base64.b64encode(out.getvalue()).decode()
    return httpx.Response(200, json={"created": 1_764_000_000, "data": [{"b64_json": png}]})


async def test_a_host_run_reads_a_section_of_an_indexed_file(db, make_kernel, scripted, tmp_path):
    """alice's file is indexed first (by a kernel whose only embedder is the scripted one);
    her run through the host reads its section, browses and reads it, saves its table as
    CSV, walks a UDM and has an image generated (OpenAI's Images API faked at the wire)."""
    import nyla_provider_openai
    import nyla_toolbox_documents
    from nyla_host.app import bare_app, build_state, mount, shutdown, startup
    from nyla_host.state import HostSettings

    model = scripted(_reading_script, embed_fn=_embed)
    context = RunContext(user_id="alice", mandate_id="m1")
    indexer = make_kernel(nyla_toolbox_documents, model, db=db, settings={"data_dir": tmp_path})
    item = await indexer.files.save("guide.md", GUIDE, context)
    indexed = await indexer.knowledge.indexing.index_file(item, GUIDE, context=context)
    assert indexed.status == "indexed", indexed.error
    openai = nyla_provider_openai.OpenAIProvider(
        api_key="sk-test", transport=sdk_transport(_images)
    )
    kernel = make_kernel(
        nyla_toolbox_documents,
        ScriptedPlugin(model, openai),
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
            prompt = f"Read the usage of {item.id}"
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
                ("readSection", True),
                ("browseContainer", True),
                ("readContentObjects", True),
                ("extractContainerItem", True),
                ("getUdmStructure", True),
                ("walkUdmBlocks", True),
                ("filterUdmByType", True),
                ("generateImage", True),
            ]
            final = next(e for e in events if e.get("type") == "FINAL")
            assert final["text"] == "Section: Run nyla with --fast."
            workflow = await kernel.files.workflows.load(run["conversationId"], context)
            documents = {d.file_name: d.file_id for d in workflow.documents()}
            assert sorted(documents) == ["disk.png", "table-1.csv"]
            csv = await client.get(
                f"/api/files/{documents['table-1.csv']}/content", headers=headers
            )
            assert csv.text.splitlines() == ["Disk,Free", "sda,40%"]
    finally:
        await shutdown(state)
