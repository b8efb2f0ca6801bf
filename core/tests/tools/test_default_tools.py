"""The ``core`` and ``ai`` toolboxes through the dispatcher, the real file store and the AI
service, plus the file-bridge chain inside a run."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from click.testing import CliRunner

from nyla.agent.registry import ToolRegistry
from nyla.agent.tool_services import tool_services
from nyla.files.bridge import ChatWorkflow
from nyla.hookspecs import hookimpl
from nyla.models.agent import EventType, RunContext
from nyla.models.ai import ChatRequest, OperationType
from nyla.models.tools import ToolContext, ToolResult

ANNA = RunContext(user_id="anna", workflow_id="wf-anna")
BRUNO = RunContext(user_id="bruno")

CORE_TOOLS = {
    "readFile",
    "listFiles",
    "searchInFileContent",
    "writeFile",
    "deleteFile",
    "renameFile",
    "moveFile",
    "tagFile",
    "copyFile",
    "replaceInFile",
    "listFolders",
    "createFolder",
    "deleteFolder",
    "renameFolder",
    "moveFolder",
}
AI_TOOLS = {"detectLanguage", "translateText", "summarizeContent", "neutralizeData"}


class Caller:
    """Calls tools like the loop does, for one run context."""

    def __init__(self, kernel: Any, run: RunContext, workflow: ChatWorkflow | None = None):
        self.registry = ToolRegistry(kernel.plugins.tools(), database=kernel.db)
        self.kernel = kernel
        self.run = run
        self.workflow = workflow
        self.charged: list[float] = []

    async def __call__(self, tool_name: str, /, **arguments: Any) -> ToolResult:
        from nyla.models.ai import ToolCall

        ctx = ToolContext(
            run=self.run,
            services=tool_services(self.kernel.agent.services),
            on_charge=self.charged.append,
            workflow=self.workflow,
        )
        done = await self.registry.dispatch(
            ToolCall(id="t", name=tool_name, arguments=json.dumps(arguments)), ctx
        )
        return done.result


@pytest.fixture
def kernel(make_kernel, scripted, db):
    def script(request: ChatRequest, i: int) -> Any:
        system = request.messages[0].text
        user = request.messages[-1].text
        if "ISO 639-1" in system:
            return "de"
        if "Translate" in system:
            return f"EN: {user}"
        if "Summarize" in system:
            return f"SUMMARY({len(user)} chars): {user[:40]}"
        return "ok"

    return make_kernel(scripted(script), db=db)


async def test_every_default_tool_is_registered(kernel):
    names = {t.name for t in kernel.plugins.tools()}
    assert names >= CORE_TOOLS | AI_TOOLS
    read_only = {t.name for t in kernel.plugins.tools() if t.read_only}
    assert {"readFile", "listFiles", "searchInFileContent", "listFolders"} <= read_only
    assert not ({"writeFile", "deleteFile", "deleteFolder"} & read_only)


async def test_file_tools_end_to_end(kernel):
    call = Caller(kernel, ANNA)
    folder = (await call("createFolder", name="Docs")).data
    created = await call(
        "writeFile", name="plan.md", content="alpha\nbeta\ngamma", folderId=folder["id"]
    )
    assert created.success and "file id:" in created.content
    file_id = created.data["fileId"]
    assert (await call("readFile", fileId=file_id)).content == "alpha\nbeta\ngamma"
    part = await call("readFile", fileId=file_id, startLine=2, endLine=3)
    assert part.content == "[lines 2-3 of 3]\nbeta\ngamma"
    past = await call("readFile", fileId=file_id, startLine=9)
    assert past.error_details.code == "INVALID_VALUE"
    await call("writeFile", mode="append", fileId=file_id, content="\ndelta")
    hits = await call("searchInFileContent", query="DELTA")
    assert [(h["line"], h["text"]) for h in hits.data] == [(4, "delta")]
    assert (await call("replaceInFile", fileId=file_id, oldText="beta", newText="BETA")).success
    missing = await call("replaceInFile", fileId=file_id, oldText="zeta", newText="x")
    assert missing.error_details.code == "NO_MATCH"
    await call("tagFile", fileId=file_id, tags=["q3", "draft"])
    await call("tagFile", fileId=file_id, tags=["draft"], mode="remove")
    listed = await call("listFiles", tags=["q3"])
    assert [f["fileId"] for f in listed.data] == [file_id]
    copy = await call("copyFile", fileId=file_id, newName="plan-copy.md")
    await call("renameFile", fileId=file_id, newName="final.md")
    await call("moveFile", fileId=file_id, folderId=None)
    names = {f["name"]: f["folderId"] for f in (await call("listFiles")).data}
    assert names == {"final.md": None, "plan-copy.md": folder["id"]}
    sub = (await call("createFolder", name="Old", parentId=folder["id"])).data
    await call("renameFolder", folderId=sub["id"], newName="Archive")
    await call("moveFolder", folderId=sub["id"], parentId=None)
    tree = await call("listFolders", recursive=True)
    assert {f["name"]: f["parentId"] for f in tree.data} == {"Docs": None, "Archive": None}
    not_empty = await call("deleteFolder", folderId=folder["id"])
    assert not_empty.error_details.code == "FOLDER_NOT_EMPTY"
    assert (await call("deleteFolder", folderId=folder["id"], recursive=True)).success
    assert (await call("readFile", fileId=copy.data["fileId"])).error_details.code == "NOT_FOUND"
    assert (await call("deleteFile", fileId=file_id)).success
    assert (await call("listFiles")).data == []


async def test_file_tools_respect_scope(kernel):
    anna, bruno = Caller(kernel, ANNA), Caller(kernel, BRUNO)
    file_id = (await anna("writeFile", name="private.txt", content="mine")).data["fileId"]
    for name, args in [
        ("readFile", {"fileId": file_id}),
        ("deleteFile", {"fileId": file_id}),
        ("renameFile", {"fileId": file_id, "newName": "stolen.txt"}),
        ("writeFile", {"mode": "overwrite", "fileId": file_id, "content": "x"}),
        ("copyFile", {"fileId": file_id}),
    ]:
        result = await bruno(name, **args)
        assert result.error_details.code == "NOT_FOUND", name
    assert (await bruno("searchInFileContent", query="mine")).data == []
    assert (await anna("readFile", fileId=file_id)).content == "mine"


async def test_write_file_without_name_asks_for_it(kernel):
    result = await Caller(kernel, ANNA)("writeFile", content="x")
    assert (result.error_details.code, result.error_details.field) == ("MISSING_FIELD", "name")


async def test_ai_tools_go_through_the_ai_service_and_charge_the_run(kernel):
    call = Caller(kernel, ANNA)
    assert (await call("detectLanguage", text="Guten Tag")).data == {"language": "de"}
    assert (await call("translateText", text="Hallo", targetLanguage="en")).content == "EN: Hallo"
    summary = await call("summarizeContent", text="A long text about Q3 revenue.")
    assert summary.content.startswith("SUMMARY(")
    assert len(call.charged) == 3 and all(c > 0 for c in call.charged)
    nothing = await call("summarizeContent")
    assert nothing.error_details.code == "INVALID_VALUE"


class EmailFinder:
    id = "test-email"

    def find(self, text: str) -> list[Any]:
        from nyla.models.neutralize import Finding

        return [
            Finding(start=m.start(), end=m.end(), category="EMAIL", value=m.group(0))
            for m in re.finditer(r"[\w.]+@[\w.]+\.\w+", text)
        ]


class NeutralizerPlugin:
    @hookimpl
    def nyla_neutralizers(self) -> list[Any]:
        return [EmailFinder()]


async def test_neutralize_data_is_non_destructive(make_kernel, scripted, db):
    kernel = make_kernel(scripted(lambda r, i: "ok"), NeutralizerPlugin(), db=db)
    call = Caller(kernel, ANNA)
    file_id = (await call("writeFile", name="c.txt", content="Mail anna@example.com")).data[
        "fileId"
    ]
    from_text = await call("neutralizeData", text="Write to bruno@example.org today")
    assert from_text.content == "Write to [EMAIL_1] today"
    from_file = await call("neutralizeData", fileId=file_id)
    assert from_file.content == "Mail [EMAIL_1]" and from_file.data["placeholders"] == 1
    assert (await call("readFile", fileId=file_id)).content == "Mail anna@example.com"


async def test_the_file_bridge_chain_in_a_run(make_kernel, scripted, db, run_events, only):
    """writeFile produces a file -> the model passes its docItem reference ->
    summarizeContent reads it through the workflow's chat documents."""

    def script(request: ChatRequest, i: int) -> Any:
        if request.operation is OperationType.DATA_ANALYSE:
            assert "Revenue Q3: 1.2M CHF" in request.messages[-1].text
            return "Q3 revenue was 1.2M CHF."
        if i == 0:
            return [("writeFile", {"name": "q3.md", "content": "Revenue Q3: 1.2M CHF"})]
        if i == 1:
            ref = re.search(r"docItem:[\w-]+", request.messages[-1].text).group(0)
            return [("summarizeContent", {"documentList": [ref]})]
        return "Summary: " + request.messages[-1].text

    provider = scripted(script)
    kernel = make_kernel(provider, db=db)
    events = await run_events(kernel.agent.run("Write and summarize", context=ANNA))
    results = only(events, EventType.TOOL_RESULT)
    assert [r.data["success"] for r in results] == [True, True]
    assert "documentList ref: docItem:" in results[0].text
    assert events[-2].text == "Summary: Q3 revenue was 1.2M CHF."
    workflow = await kernel.files.workflows.load("wf-anna", ANNA)
    assert [d.file_name for d in workflow.documents()] == ["q3.md"]


async def test_doc_item_from_another_workflow_is_not_found(kernel):
    anna_wf = await kernel.files.workflows.load("wf-anna", ANNA)
    writer = Caller(kernel, ANNA, anna_wf)
    created = await writer("writeFile", name="n.md", content="secret")
    ref = created.data["docItem"]
    other_wf = await kernel.files.workflows.load("wf-other", ANNA)
    reader = Caller(kernel, ANNA, other_wf)
    result = await reader("summarizeContent", documentList=ref)
    assert result.error_details.code == "NOT_FOUND" and ref in result.error


def test_tools_list_json_names_every_tool_and_request_toolbox():
    from nyla.cli import cli

    result = CliRunner().invoke(cli, ["tools", "list", "--json"])
    assert result.exit_code == 0, result.output
    names = {row["name"] for row in json.loads(result.output)}
    assert CORE_TOOLS | AI_TOOLS | {"requestToolbox"} <= names
