"""The documents toolbox in ``nyla run`` (issue 33: exercised in an agent run through the
CLI): a scripted model behind plugin discovery draws a chart, has it described
(``describeImage`` of the media toolbox), renders it into a DOCX and a PPTX and browses the
DOCX it made; in a second run it reads a section of a file indexed
first, the file's parts and table, walks a UDM and has an image generated. The runs' JSON
events show each tool succeed."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import re

import httpx
import pytest
from click.testing import CliRunner

from nyla.cli import cli
from nyla.models.ai import ChatResponse, ImagePart, Role, ToolCall
from nyla.plugins import PluginHost
from nyla.sdk import RunContext
from nyla.testing import open_database, plugin_kernel
from nyla.testing.provider_wire import sdk_transport
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

pytestmark = pytest.mark.db

CHART = {"kind": "line", "labels": ["Jan", "Feb"], "series": [{"values": [1, 3]}]}


def _ids(result: str) -> list[str]:
    return re.findall(r"file id: (\S+)", result)


def script(request, index):
    parts = [p for m in request.messages if isinstance(m.content, list) for p in m.content]
    if any(isinstance(p, ImagePart) for p in parts):
        return "A rising line."
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        return ChatResponse(
            tool_calls=[ToolCall(id="c", name="createChart", arguments=json.dumps(CHART))]
        )
    png = _ids(results[0].text)[0]
    if len(results) == 1:
        args = {"fileId": png, "question": "What does it show?"}
        return ChatResponse(
            tool_calls=[ToolCall(id="d", name="describeImage", arguments=json.dumps(args))]
        )
    if len(results) == 2:
        markdown = f"# Trend\n\nIt rises.\n\n![trend](file:{png})\n"
        args = {"markdown": markdown, "formats": ["docx", "pptx"], "name": "trend"}
        return ChatResponse(
            tool_calls=[ToolCall(id="r", name="renderDocument", arguments=json.dumps(args))]
        )
    if len(results) == 3:
        docx = _ids(results[2].text)[0]
        return ChatResponse(
            tool_calls=[
                ToolCall(id="b", name="browseContainer", arguments=json.dumps({"fileId": docx}))
            ]
        )
    return (
        results[1].text
        + " counts: "
        + json.dumps(json.loads(results[-1].text)["counts"], sort_keys=True)
    )


def test_nyla_run_charts_renders_and_browses(monkeypatch, tmp_path, cli_database):
    import nyla_toolbox_documents
    import nyla_toolbox_media

    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_USER", "rita")
    from nyla import config

    config.reload()
    plugins = [nyla_toolbox_documents, nyla_toolbox_media, ScriptedPlugin(ScriptedProvider(script))]
    monkeypatch.setattr(
        PluginHost,
        "discover",
        classmethod(
            lambda cls, **kw: cls.from_plugins(
                plugins, builtins=True, names=["documents", "media", "scripted"]
            )
        ),
    )
    done = CliRunner().invoke(
        cli, ["run", "Chart the trend into a report", "--json", "--model", "scripted:model"]
    )
    assert done.exit_code == 0, done.output
    events = [json.loads(line) for line in done.output.splitlines() if line.startswith("{")]
    results = [e["data"] for e in events if e["type"] == "TOOL_RESULT"]
    assert [(r["toolName"], r["success"]) for r in results] == [
        ("createChart", True),
        ("describeImage", True),
        ("renderDocument", True),
        ("browseContainer", True),
    ]
    final = next(e for e in events if e["type"] == "FINAL")["text"]
    assert final == 'A rising line. counts: {"heading": 1, "image": 1, "text": 1}'


GUIDE = """# Guide

Intro.

## Setup

Check the disk first.

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
        {"type": "table", "header": ["a", "b"], "rows": [["1", "2"]]},
        {"type": "image", "alt": "logo", "src": "file:abc"},
    ],
}


def _reading_script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    prompt = next(m for m in request.messages if m.role is Role.USER)
    file_id = prompt.text.split()[-1]
    calls = [
        ("readSection", {"fileId": file_id, "section": "Usage"}),
        ("readContentObjects", {"fileId": file_id, "refs": ["section Guide > Setup"]}),
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
    setup = next(line for line in results[1].text.splitlines() if "sda" in line)
    return "Section: " + results[0].text.splitlines()[-1] + " " + setup


def _embed(texts: list[str]) -> list[list[float]]:
    """A deterministic 8-dimension embedding (indexing needs one; nothing here searches)."""
    return [
        [b / 255 + 0.01 for b in hashlib.blake2b(t.encode(), digest_size=8).digest()] for t in texts
    ]


def images(request: httpx.Request) -> httpx.Response:
    """OpenAI's ``POST /v1/images/generations``, answering one PNG as ``b64_json``; nothing
    else (the run's memory embeds without OpenAI then)."""
    if request.url.path != "/v1/images/generations":
        return httpx.Response(404, json={"error": {"message": "not here", "type": "invalid"}})
    png = base64.b64encode(_png()).decode()
    return httpx.Response(200, json={"created": 1_764_000_000, "data": [{"b64_json": png}]})


def _png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8), "teal").save(out, format="PNG")
    return out.getvalue()


async def _indexed_guide(plugins: list[object], url: str, cli_url: str) -> str:
    """guide.md saved into rita's files and indexed, in the schema the ``nyla`` commands use."""
    schema = re.findall(r"search_path%3D(\w+),", cli_url)[0]
    db = open_database(url, schema)
    try:
        kernel = plugin_kernel(*plugins, db=db, builtins=True)
        context = RunContext(user_id="rita")
        item = await kernel.files.save("guide.md", GUIDE.encode(), context)
        done = await kernel.knowledge.indexing.index_file(item, GUIDE.encode(), context=context)
        assert done.status == "indexed", done.error
        return str(item.id)
    finally:
        await db.dispose()


def test_nyla_run_reads_an_indexed_section_and_walks_a_udm(
    monkeypatch, tmp_path, embedded_pg, cli_database
):
    """A file of rita's indexed first; the run reads its section through the
    knowledge store, its parts and table through the document tools, walks a UDM and has an
    image generated (OpenAI's Images API faked at the wire)."""
    import nyla_provider_openai
    import nyla_toolbox_documents

    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.setenv("NYLA_USER", "rita")
    from nyla import config

    config.reload()
    openai = nyla_provider_openai.OpenAIProvider(api_key="sk-test", transport=sdk_transport(images))
    scripted = ScriptedProvider(_reading_script, embed_fn=_embed)
    plugins = [nyla_toolbox_documents, ScriptedPlugin(scripted)]
    monkeypatch.setattr(
        PluginHost,
        "discover",
        classmethod(lambda cls, **kw: cls.from_plugins(plugins, builtins=True)),
    )
    file_id = asyncio.run(_indexed_guide(plugins, embedded_pg, cli_database))
    plugins[1] = ScriptedPlugin(scripted, openai)
    done = CliRunner().invoke(
        cli, ["run", f"Read the usage of {file_id}", "--json", "--model", "scripted:model"]
    )
    assert done.exit_code == 0, done.output
    events = [json.loads(line) for line in done.output.splitlines() if line.startswith("{")]
    results = [e["data"] for e in events if e["type"] == "TOOL_RESULT"]
    assert [(r["toolName"], r["success"]) for r in results] == [
        ("readSection", True),
        ("readContentObjects", True),
        ("extractContainerItem", True),
        ("getUdmStructure", True),
        ("walkUdmBlocks", True),
        ("filterUdmByType", True),
        ("generateImage", True),
    ]
    final = next(e for e in events if e["type"] == "FINAL")["text"]
    assert final == "Section: Run nyla with --fast. | sda | 40% |"
