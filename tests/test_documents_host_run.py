"""The documents toolbox in a host run: a user asks through ``POST /api/runs``, a scripted
model uploads nothing but calls ``createChart`` and ``renderDocument`` (the chart embedded
by ``file:<id>``), the run streams both tool results, the conversation holds the produced
files as chat documents, and the PDF downloads through the host's file route and extracts
again with the same heading and table."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import pytest

import nyla_host.tables  # noqa: F401  (host tables are created with the kernel's)
from nyla import RunContext
from nyla.sdk import ChatResponse, Role, ToolCall

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
