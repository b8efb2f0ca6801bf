"""The action bridge: an action's result documents land in the caller's chat workflow as
FileItem -> ChatDocument -> ChatMessage numbered by round, task and action; a document
parameter takes every tolerant form; binding to a workflow the caller may not change is
refused before the action runs."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from nyla.actions.bridge import (
    WorkflowBindingError,
    bind_documents,
    open_workflow,
    resolve_document_list,
    step_context,
)
from nyla.actions.executor import ActionArgumentError
from nyla.agent.tool_services import tool_services
from nyla.models.agent import AgentConfig, EventType, RunContext
from nyla.models.ai import ChatRequest
from nyla.models.chat import ChatDocument, ChatMessage, ChatWorkflow
from nyla.models.tools import ToolContext
from nyla.sdk import hookimpl
from nyla.sdk.actions import Action, ActionParams, ActionResult, DocumentList, FileId, Method

pytestmark = pytest.mark.db

ANNA = RunContext(user_id="anna", workflow_id="conv-anna")


class MakeParams(ActionParams):
    """Parameters of ``docs.make``."""

    name: str = Field(description="The file's name.")


class ReadParams(ActionParams):
    """Parameters of ``docs.read``."""

    documents: DocumentList = Field(default_factory=list, description="What to read.")
    one: FileId | None = Field(None, description="One more document.")


class DocsPlugin:
    """The ``docs`` method: ``make`` saves a file and names it as its document, ``read``
    records the file ids it got."""

    def __init__(self) -> None:
        self.read: list[ReadParams] = []

    async def make(self, params: MakeParams, ctx: ToolContext) -> ActionResult:
        item = await ctx.services.files.save(params.name, b"made", ctx.run, dedupe=False)
        return ActionResult(
            text=f"made {params.name}", data={"name": params.name}, documents=[item.id]
        )

    async def read_docs(self, params: ReadParams, ctx: ToolContext) -> str:
        self.read.append(params)
        return "read"

    @hookimpl
    def nyla_methods(self) -> list[Method]:
        return [
            Method(
                name="docs",
                description="Document actions.",
                actions=[
                    Action(name="make", description="Make a file.", params=MakeParams, handler=self.make, writes=True),
                    Action(name="read", description="Read files.", params=ReadParams, handler=self.read_docs),
                ],
            )
        ]  # fmt: skip


@pytest.fixture
def docs() -> DocsPlugin:
    return DocsPlugin()


async def stored_documents(
    kernel: Any, workflow_id: str, context: RunContext
) -> list[ChatDocument]:
    return (await kernel.files.workflows.load(workflow_id, context)).documents()


async def test_an_agent_round_numbers_each_calls_documents(
    scripted, make_kernel, db, docs, run_events, only
):
    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("docs_make", {"name": "a.txt"}), ("docs_make", {"name": "b.txt"})]
        if i == 1:
            return [
                ("writeFile", {"name": "c.txt", "content": "c"}),
                ("docs_make", {"name": "d.txt"}),
            ]
        return "Done."

    kernel = make_kernel(scripted(script), docs, db=db)
    events = await run_events(kernel.agent.run("Make files.", AgentConfig(), ANNA))
    assert events[-1].data["status"] == "completed", events[-1].data
    results = only(events, EventType.TOOL_RESULT)
    assert all(r.data["success"] for r in results), [r.data for r in results]
    assert "docItem:" in results[0].text
    numbers = {
        d.file_name: (d.round_number, d.task_number, d.action_number)
        for d in await stored_documents(kernel, ANNA.workflow_id, ANNA)
    }
    assert numbers == {
        "a.txt": (1, 1, 1),
        "b.txt": (1, 2, 1),
        "c.txt": (2, 1, 1),  # a core tool's file, bound through attach_to_run
        "d.txt": (2, 2, 1),
    }


async def test_the_result_names_its_documents_and_a_later_call_reads_them_by_doc_item(
    make_kernel, db, docs
):
    kernel = make_kernel(docs, db=db)
    workflow = await kernel.files.workflows.load(ANNA.workflow_id, ANNA)
    ctx = ToolContext(
        run=ANNA, services=tool_services(kernel.agent.services), workflow=workflow, round=2,
        task_number=3, action_number=1,
    )  # fmt: skip
    made = await kernel.action_executor.run("docs", "make", {"name": "r.txt"}, ctx)
    assert made.success, made.error
    [listed] = made.data["documents"]
    assert made.data["name"] == "r.txt"
    assert (listed["roundNumber"], listed["taskNumber"], listed["actionNumber"]) == (2, 3, 1)
    assert listed["documentRef"] in made.content and listed["fileId"] in made.content
    message = workflow.messages[-1]  # the in-memory workflow is kept in step
    assert message.status == "step" and message.documents_label.startswith("action:docs.make:")
    read = await kernel.action_executor.run(
        "docs",
        "read",
        {"documents": [listed["documentRef"]], "one": {"id": listed["documentId"]}},
        ctx,
    )
    assert read.success, read.error
    assert docs.read[-1].documents == [listed["fileId"]] and docs.read[-1].one == listed["fileId"]


def a_workflow() -> ChatWorkflow:
    def doc(i: str, file_id: str) -> ChatDocument:
        return ChatDocument(
            id=i,
            message_id="m",
            file_id=file_id,
            file_name=f"{file_id}.txt",
            mime_type="text/plain",
        )

    return ChatWorkflow(
        id="w",
        user_id="anna",
        messages=[
            ChatMessage(id="m1", documents_label="action:docs.make:1234", documents=[doc("d1", "f1")]),
            ChatMessage(id="m2", documents_label="writeFile:x:5678", documents=[doc("d2", "f2"), doc("d3", "f3")]),
        ],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("f9", ["f9"]),  # a file id
        (["docItem:d1", "f9"], ["f1", "f9"]),
        ({"type": "file", "id": "f9"}, ["f9"]),
        ([{"id": "d2", "name": "f2.txt"}], ["f2"]),  # the model's list-of-objects style
        ({"documents": [{"id": "d1"}, {"id": "docItem:d3"}]}, ["f1", "f3"]),
        ([{"fileId": "f7", "documentRef": None}], ["f7"]),  # a result's documents entry
        ("docList:writeFile:x", ["f2", "f3"]),
        (["d1", "docItem:d1", {"type": "file", "id": "f1"}], ["f1"]),  # each file once
    ],
)
def test_every_tolerant_form_resolves_to_file_ids(value, expected):
    assert resolve_document_list(value, a_workflow()) == expected


@pytest.mark.parametrize(
    ("arguments", "code", "field"),
    [
        ({"documents": ["docItem:nope"]}, "NOT_FOUND", "documents"),
        ({"documents": "docList:missing"}, "NOT_FOUND", "documents"),
        ({"documents": [{"type": "featureInstance", "id": "fi"}]}, "INVALID_TYPE", "documents"),
        ({"documents": [{"name": "no id"}]}, "INVALID_TYPE", "documents"),
        ({"documents": [42]}, "INVALID_TYPE", "documents"),
        ({"one": "docList:writeFile:x"}, "INVALID_VALUE", "one"),  # two documents for one
    ],
)
def test_a_bad_document_reference_is_a_repairable_refusal(
    make_kernel, docs, arguments, code, field
):
    kernel = make_kernel(docs)
    with pytest.raises(ActionArgumentError) as caught:
        kernel.action_executor.validate("docs", "read", arguments, a_workflow())
    details = caught.value.result.error_details
    assert (details.code, details.field) == (code, field), caught.value.result.error


def test_a_doc_item_outside_a_conversation_says_to_pass_the_file_id(make_kernel, docs):
    with pytest.raises(ActionArgumentError) as caught:
        make_kernel(docs).action_executor.validate("docs", "read", {"documents": "docItem:d1"})
    assert "pass the file id" in caught.value.result.error


async def test_binding_to_a_workflow_the_caller_may_not_change_is_refused_before_the_action(
    make_kernel, db, docs
):
    kernel = make_kernel(docs, db=db)
    bens = await kernel.files.workflows.load("conv-ben", RunContext(user_id="ben"))
    anna = RunContext(user_id="anna", workflow_id="conv-anna")
    ctx = ToolContext(run=anna, services=tool_services(kernel.agent.services), workflow=bens)
    result = await kernel.action_executor.run("docs", "make", {"name": "x.txt"}, ctx)
    assert not result.success and result.error_details.code == "ACCESS_DENIED"
    assert "may change" in result.error and result.error_details.field == "workflowId"
    assert await kernel.files.list(anna) == []  # the action never ran: no file was written
    assert (await kernel.files.workflows.load("conv-ben", RunContext(user_id="ben"))).messages == []
    with pytest.raises(WorkflowBindingError, match="not a workflow you may change"):
        await open_workflow(kernel.files.workflows, "conv-ben", anna, db)
    # the run's own workflow id does not make another user's workflow changeable
    posing = RunContext(user_id="anna", workflow_id="conv-ben")
    with pytest.raises(WorkflowBindingError):
        await open_workflow(kernel.files.workflows, "conv-ben", posing, db)
    mine = await open_workflow(kernel.files.workflows, "conv-anna", anna, db)  # new: created
    assert mine.user_id == "anna"


async def test_a_workflow_runs_steps_keep_round_and_task_and_number_the_action(
    make_kernel, db, docs
):
    kernel = make_kernel(docs, db=db)
    workflow = await kernel.files.workflows.load(ANNA.workflow_id, ANNA)
    started_by = ToolContext(
        run=ANNA, services=tool_services(kernel.agent.services), workflow=workflow, round=4,
        task_number=2, action_number=1,
    )  # fmt: skip
    for node in (1, 2, 3):
        item = await kernel.files.save(f"n{node}.txt", b"x", ANNA, dedupe=False)
        await bind_documents(step_context(started_by, action_number=node), [item], label="node")
    outside = ToolContext(
        run=ANNA, services=tool_services(kernel.agent.services), workflow=workflow
    )
    item = await kernel.files.save("solo.txt", b"x", ANNA, dedupe=False)
    await bind_documents(step_context(outside, action_number=1), [item.id], label="node")
    numbers = {
        d.file_name: (d.round_number, d.task_number, d.action_number)
        for d in await stored_documents(kernel, ANNA.workflow_id, ANNA)
    }
    assert numbers == {
        "n1.txt": (4, 2, 1),
        "n2.txt": (4, 2, 2),
        "n3.txt": (4, 2, 3),
        "solo.txt": (1, 1, 1),  # a workflow run outside an agent run: round 1, task 1
    }
