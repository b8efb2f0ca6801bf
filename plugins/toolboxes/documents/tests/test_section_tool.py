"""readSection on files indexed in the knowledge store: a DOCX section read verbatim, an
unknown section answered with the ones there are, another user's file refused; and an agent
run with a scripted model that reads a section of a Markdown file."""

from __future__ import annotations

import hashlib
import json

from nyla.sdk import AgentConfig, ChatResponse, Role, RunContext, ToolCall
from nyla.testing import call_tool, plugin_kernel
from nyla.testing.scripted import ScriptedProvider

from . import makers
from .conftest import USER

GUIDE = b"""# Guide

Intro.

## Setup

Check the disk first.

## Usage

Run nyla with --fast.
"""


def _embed(texts: list[str]) -> list[list[float]]:
    """A deterministic 8-dimension embedding (indexing needs one; nothing here searches)."""
    return [
        [b / 255 + 0.01 for b in hashlib.blake2b(t.encode(), digest_size=8).digest()] for t in texts
    ]


def _kernel(db, script=lambda request, index: "ok"):
    import nyla_toolbox_documents

    provider = ScriptedProvider(script, id="scripted", model="m", embed_fn=_embed)
    return plugin_kernel(nyla_toolbox_documents, provider, db=db, builtins=True)


async def _indexed(kernel, name: str, content: bytes, user: str = USER) -> str:
    context = RunContext(user_id=user)
    item = await kernel.files.save(name, content, context)
    result = await kernel.knowledge.indexing.index_file(item, content, context=context)
    assert result.status == "indexed", result.error
    return str(item.id)


async def test_read_a_docx_section_and_fail_clearly(db):
    kernel = _kernel(db)
    file_id = await _indexed(kernel, "report.docx", makers.docx_file())
    read = await call_tool(
        kernel, "readSection", {"fileId": file_id, "section": "Figures"}, user=USER
    )
    assert read.success, read.error
    assert read.data["section"] == "section Quarterly report > Figures"
    # the section's text and its table, as the store's DOCX extraction wrote them
    parts = read.content.split("\n\n")
    assert sorted(parts) == [
        "Figures",
        "First point\nSecond point",
        "Region | Revenue\nNorth | 120\nSouth | 95",
    ]
    unknown = await call_tool(
        kernel, "readSection", {"fileId": file_id, "section": "Appendix"}, user=USER
    )
    assert not unknown.success
    assert "Quarterly report > Figures" in unknown.error and "Appendix" in unknown.error
    foreign = await call_tool(
        kernel, "readSection", {"fileId": file_id, "section": "Figures"}, user="mallory"
    )
    # refused before the tool runs, as every tool's fileId of another user is
    assert not foreign.success and foreign.error_details.code == "NOT_FOUND"
    assert "not found" in foreign.error


def _script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        args = {"fileId": request.messages[-1].text.split()[-1], "section": "Usage"}
        return ChatResponse(
            tool_calls=[ToolCall(id="s1", name="readSection", arguments=json.dumps(args))]
        )
    return "Section says: " + results[-1].text.splitlines()[-1]


async def test_a_scripted_run_reads_a_section(db, run_events, only):
    kernel = _kernel(db, _script)
    file_id = await _indexed(kernel, "guide.md", GUIDE)
    context = RunContext(user_id=USER)
    config = AgentConfig(model="scripted:m", max_rounds=3, max_cost_chf=1.0)
    events = await run_events(kernel.agent.run(f"Read the usage of {file_id}", config, context))
    results = [e for e in events if e.type == "TOOL_RESULT"]
    assert [(e.data["toolName"], e.data["success"]) for e in results] == [("readSection", True)]
    final = next(e for e in events if e.type == "FINAL")
    assert final.text == "Section says: Run nyla with --fast."
