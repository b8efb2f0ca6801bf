"""``trustee.extractFromFiles``: booking candidates from the user's files through the AI
service, saved as a JSON file; its references are checked before it runs."""

from __future__ import annotations

import json

import pytest

import nyla_toolbox_trustee
from nyla.sdk import AgentConfig, OperationType, RunContext

pytestmark = pytest.mark.db

ANSWER = json.dumps(
    [
        {"date": "2026-03-02", "description": "Office chairs", "amount": -480.5, "account": "6500"},
        {"date": "not a date", "description": "garbled", "amount": "x"},
    ]
)


@pytest.fixture
def provider(scripted):
    def script(request, index):
        assert request.operation is OperationType.DATA_EXTRACT
        assert "Office chairs 480.50" in request.messages[-1].text
        return f"Here you are:\n{ANSWER}"

    return scripted(script)


async def test_extract_from_files_saves_the_candidates(db, make_kernel, provider):
    kernel = make_kernel(provider, nyla_toolbox_trustee, db=db)
    run = RunContext(user_id="u1", mandate_id="m1", feature_instance_id="fi-1")
    receipt = await kernel.files.save("receipt.txt", b"2.3.2026 Office chairs 480.50 CHF", run)
    result = await kernel.run_action(
        "trustee", "extractFromFiles", {"fileIds": {"type": "file", "id": receipt.id}}, run
    )
    assert result.success, result.error
    assert result.data["dropped"] == 1 and result.data["featureInstanceId"] == "fi-1"
    saved = json.loads(await kernel.files.read_text(result.data["fileId"], run))
    assert saved["sourceFileIds"] == [receipt.id]
    assert saved["candidates"] == [
        {
            "date": "2026-03-02",
            "description": "Office chairs",
            "amount": -480.5,
            "account": "6500",
            "source": None,
        }
    ]


async def test_another_instance_or_no_files_is_refused(db, make_kernel, provider):
    kernel = make_kernel(provider, nyla_toolbox_trustee, db=db)
    run = RunContext(user_id="u1", mandate_id="m1", feature_instance_id="fi-1")
    receipt = await kernel.files.save("receipt.txt", b"Office chairs 480.50", run)
    other = await kernel.run_action(
        "trustee",
        "extractFromFiles",
        {"fileIds": [receipt.id], "featureInstanceId": {"type": "featureInstance", "id": "fi-2"}},
        run,
    )
    assert other.error_details.code == "ACCESS_DENIED"
    empty = await kernel.run_action("trustee", "extractFromFiles", {"fileIds": []}, run)
    assert empty.error_details.code == "INVALID_VALUE" and empty.error_details.field == "fileIds"
    assert provider.requests == []


async def test_the_action_tool_comes_on_in_trustee_runs_as_a_write(db, make_kernel, provider):
    kernel = make_kernel(provider, nyla_toolbox_trustee, db=db)  # never the user's database
    trustee = RunContext(feature_instance_id="fi-1", feature_code="trustee")
    tools = {t.name: t for t in kernel.agent.toolbox_session(AgentConfig(), trustee).tools}
    assert tools["trustee_extractFromFiles"].read_only is False
    plain = {t.name for t in kernel.agent.toolbox_session(AgentConfig(), RunContext()).tools}
    assert "trustee_extractFromFiles" not in plain


async def test_the_candidates_come_back_into_the_conversation(db, make_kernel, provider):
    """The input by its docItem reference, the output bound as a chat document (round 1,
    task 1, action 1 outside an agent run) that a next step can take by reference."""
    kernel = make_kernel(provider, nyla_toolbox_trustee, db=db)
    run = RunContext(user_id="u1", mandate_id="m1", feature_instance_id="fi-1", workflow_id="c1")
    receipt = await kernel.files.save("receipt.txt", b"2.3.2026 Office chairs 480.50 CHF", run)
    conversation = await kernel.files.workflows.load("c1", run)
    await kernel.files.workflows.add_turn(
        conversation, role="user", status="prompt", text="Book this.", run_id="r", files=[receipt]
    )
    [attached] = conversation.documents()
    result = await kernel.run_action(
        "trustee",
        "extractFromFiles",
        {"fileIds": [f"docItem:{attached.id}"]},
        run,
        workflow_id="c1",
    )
    assert result.success, result.error
    [document] = result.data["documents"]
    assert document["fileId"] == result.data["fileId"]
    assert (document["roundNumber"], document["taskNumber"], document["actionNumber"]) == (1, 1, 1)
    assert document["documentRef"] in result.content
    stored = (await kernel.files.workflows.load("c1", run)).documents()
    assert [d.file_name for d in stored] == ["receipt.txt", "trustee-booking-candidates.json"]
    assert json.loads(await kernel.files.read_text(result.data["fileId"], run))[
        "sourceFileIds"
    ] == [receipt.id]
