"""executeCode in a host run (issue 35): a user uploads a CSV through the host, asks through
``POST /api/runs`` with the code toolbox on; a scripted model runs a program on that file in
the sandbox, which writes a summary into out/; the conversation holds it as a chat document
and it downloads through the host's file route."""

from __future__ import annotations

import asyncio
import json
import re
import shutil

import httpx
import pytest

import nyla_host.tables  # noqa: F401  (host tables are created with the kernel's)
from nyla import RunContext
from nyla.sdk import ChatResponse, Role, ToolCall

pytestmark = [
    pytest.mark.db,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

CODE = """
import csv
rows = list(csv.DictReader(open("in/orders.csv")))
with open("out/by_region.csv", "w", newline="") as f:
    out = csv.writer(f)
    out.writerow(["region", "amount"])
    for region in sorted({r["region"] for r in rows}):
        out.writerow([region, sum(int(r["amount"]) for r in rows if r["region"] == region)])
"""


def _script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        file_id = re.findall(r"fileId=(\S+)", request.messages[-1].text)[0]
        args = {"code": CODE, "fileIds": [file_id]}
        return ChatResponse(
            tool_calls=[ToolCall(id="x", name="executeCode", arguments=json.dumps(args))]
        )
    return "Summed by region."


async def test_a_host_run_executes_code_on_an_uploaded_file(db, make_kernel, scripted, tmp_path):
    import nyla_toolbox_code
    from nyla_host.app import bare_app, build_state, mount, shutdown, startup
    from nyla_host.state import HostSettings

    kernel = make_kernel(
        nyla_toolbox_code, scripted(_script), db=db, settings={"data_dir": tmp_path}
    )
    state = build_state(kernel, settings=HostSettings(default_model="scripted:model"))
    await startup(state)
    try:
        app = bare_app()
        mount(app, state)
        token, _ = await state.tokens.create("alice", role="user", mandate_id="m1")
        headers = {"Authorization": f"Bearer {token}"}
        context = RunContext(user_id="alice", mandate_id="m1")
        orders = b"region,amount\nNorth,5\nSouth,7\nNorth,3\n"
        item = await kernel.files.save("orders.csv", orders, context, mime_type="text/csv")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://host.test") as client:
            started = await client.post(
                "/api/runs",
                json={"prompt": f"Sum fileId={item.id} by region", "toolboxes": ["code"]},
                headers=headers,
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
            assert [(r["toolName"], r["success"]) for r in results] == [("executeCode", True)]
            workflow = await kernel.files.workflows.load(run["conversationId"], context)
            documents = {d.file_name: d.file_id for d in workflow.documents()}
            assert list(documents) == ["by_region.csv"]
            url = f"/api/files/{documents['by_region.csv']}/content"
            got = await client.get(url, headers=headers)
            assert got.status_code == 200
            assert got.content.replace(b"\r\n", b"\n") == b"region,amount\nNorth,8\nSouth,7\n"
    finally:
        await shutdown(state)
