"""executeCode as a run calls it: the user's files in, a CSV out as a chat document; a failing
program's output comes back; an agent run with a scripted model; and no toolbox where no
sandbox can be set up, with the reason."""

from __future__ import annotations

import json

import pytest

from nyla.sdk import AgentConfig, ChatResponse, Role, RunContext, ToolCall
from nyla.testing import ToolboxContract, call_tool, invoke_cli, plugin_kernel
from nyla.testing.scripted import ScriptedProvider

from .conftest import USER, needs_bwrap

CODE = """
import csv
rows = [r for r in csv.reader(open("in/sales.csv"))][1:]
total = sum(int(amount) for _, amount in rows)
with open("out/summary.csv", "w", newline="") as f:
    csv.writer(f).writerows([["regions", "total"], [len(rows), total]])
print("total", total)
"""
SALES = b"region,amount\nNorth,120\nSouth,95\nEast,40\n"


@needs_bwrap
class TestCodeToolboxContract(ToolboxContract):
    @pytest.fixture
    def plugin(self):
        import nyla_toolbox_code

        return nyla_toolbox_code


@needs_bwrap
async def test_a_program_reads_a_file_and_writes_a_csv_document(kernel):
    context = RunContext(user_id=USER)
    sales = await kernel.files.save("sales.csv", SALES, context, mime_type="text/csv")
    got = await call_tool(kernel, "executeCode", {"code": CODE, "fileIds": [sales.id]}, user=USER)
    assert got.success, got.error
    assert "total 255" in got.content and got.data["exitCode"] == 0
    [made] = got.data["files"]
    assert made["name"] == "summary.csv" and made["mimeType"] == "text/csv"
    content = await kernel.files.read_bytes(made["fileId"], context)
    assert content.replace(b"\r\n", b"\n") == b"regions,total\n3,255\n"


@needs_bwrap
async def test_a_failing_program_returns_its_error_and_bad_ids_are_refused(kernel):
    failed = await call_tool(kernel, "executeCode", {"code": "print('hi')\n1/0"}, user=USER)
    assert not failed.success and failed.data["exitCode"] == 1
    assert "hi" in failed.error and "ZeroDivisionError" in failed.error
    theirs = await kernel.files.save("x.csv", b"a", RunContext(user_id="eve"))
    foreign = await call_tool(
        kernel, "executeCode", {"code": "pass", "fileIds": [theirs.id]}, user=USER
    )
    assert not foreign.success and foreign.error_details.code == "NOT_FOUND"
    loud = await call_tool(kernel, "executeCode", {"code": "print('y' * 100000)"}, user=USER)
    assert (
        loud.success and "[stdout truncated: 100001 bytes, the first 32768 shown]" in loud.content
    )


def _script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        code = "import statistics\nprint(statistics.mean([3, 4, 8]))\n"
        code += "open('out/mean.txt', 'w').write('5')"
        return ChatResponse(
            tool_calls=[ToolCall(id="c1", name="executeCode", arguments=json.dumps({"code": code}))]
        )
    return "The mean is " + results[-1].text.split("stdout:\n")[1].split("\n")[0]


@needs_bwrap
async def test_an_agent_run_calls_execute_code(db, run_events):
    import nyla_toolbox_code

    provider = ScriptedProvider(_script, id="scripted", model="m")
    kernel = plugin_kernel(nyla_toolbox_code, provider, db=db, builtins=True)
    context = RunContext(user_id=USER, workflow_id="wf-code")
    config = AgentConfig(
        model="scripted:m", max_rounds=3, max_cost_chf=1.0, initial_toolboxes=["code"]
    )
    events = await run_events(kernel.agent.run("Mean of 3, 4, 8?", config, context))
    results = [e for e in events if e.type == "TOOL_RESULT"]
    assert [(e.data["toolName"], e.data["success"]) for e in results] == [("executeCode", True)]
    assert next(e for e in events if e.type == "FINAL").text == "The mean is 5"
    workflow = await kernel.files.workflows.load("wf-code", context)
    assert [d.file_name for d in workflow.documents()] == ["mean.txt"]


def test_without_bwrap_the_toolbox_is_absent_and_the_reason_shown(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no bwrap
    monkeypatch.setenv("NYLA_PLUGIN_CACHE", "off")
    monkeypatch.delenv("NYLA_STRICT_PLUGINS", raising=False)
    tools = invoke_cli(["tools", "list", "--json"])
    assert tools.exit_code == 0, tools.output
    assert "executeCode" not in {t["name"] for t in json.loads(tools.output)}
    shown = invoke_cli(["plugins", "show", "code-toolbox", "--json"])
    record = json.loads(shown.output)
    assert record["status"] == "failed" and "contributes" in record
    assert "bwrap (Debian package bubblewrap) is not on PATH" in record["error"]
