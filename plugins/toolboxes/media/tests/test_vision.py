"""describeImage sends one of the user's images to an imageAnalyse model, through the AI
service: the question and the image in one message, the cost charged to the run; the image
passes the neutralization gate (personal data in its text blacked out, or the call refused
where the run requires neutralization and the image cannot be checked)."""

from __future__ import annotations

import base64
import json
import shutil

import pytest

from nyla.sdk import (
    AgentConfig,
    ChatResponse,
    ImagePart,
    OperationType,
    Role,
    RunContext,
    TextPart,
    ToolCall,
)
from nyla.testing import call_tool, plugin_kernel
from nyla.testing.scripted import ScriptedProvider

from .conftest import USER, ocr_text, png_with_text

needs_ocr = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract missing")


def _images(provider):
    return [
        p
        for r in provider.requests
        for m in r.messages
        if isinstance(m.content, list)
        for p in m.content
        if isinstance(p, ImagePart)
    ]


def _vision_script(request, index):
    if any(_images_in(m) for m in request.messages):
        return "A white page with two lines of text."
    return "no image"


def _images_in(message):
    return isinstance(message.content, list) and any(
        isinstance(p, ImagePart) for p in message.content
    )


@pytest.fixture
def vision(db):
    import nyla_toolbox_media

    provider = ScriptedProvider(
        _vision_script, id="eye", model="v", operations=[OperationType.IMAGE_ANALYSE]
    )
    return provider, plugin_kernel(nyla_toolbox_media, provider, db=db, builtins=True)


async def _save(kernel, name, content, mime):
    item = await kernel.files.save(name, content, RunContext(user_id=USER), mime_type=mime)
    return item.id


async def test_the_image_and_the_question_reach_the_vision_model(vision):
    provider, kernel = vision
    content = png_with_text("Quarterly revenue 12 %")
    file_id = await _save(kernel, "chart.png", content, "image/png")
    args = {"fileId": file_id, "question": "What is the growth?"}
    result = await call_tool(kernel, "describeImage", args, user=USER)
    assert result.success, result.error
    assert result.content == "A white page with two lines of text."
    [request] = provider.requests
    user = request.messages[-1]
    assert user.role is Role.USER and user.content[0] == TextPart(text="What is the growth?")
    assert [base64.b64decode(p.data_base64) for p in _images(provider)] == [content]
    assert result.data["costChf"] > 0


async def test_a_file_that_is_no_image_is_refused(vision):
    provider, kernel = vision
    file_id = await _save(kernel, "notes.txt", b"hello", "text/plain")
    result = await call_tool(kernel, "describeImage", {"fileId": file_id}, user=USER)
    assert result.error_details.code == "UNSUPPORTED_TYPE"
    assert provider.requests == []


async def test_another_users_image_is_not_read(vision):
    provider, kernel = vision
    file_id = await _save(kernel, "chart.png", png_with_text("x"), "image/png")
    result = await call_tool(kernel, "describeImage", {"fileId": file_id}, user="mallory")
    assert not result.success
    assert provider.requests == []


def _agent_script(request, index):
    results = [m for m in request.messages if m.role is Role.TOOL]
    if any(_images_in(m) for m in request.messages):
        return "An invoice; the e-mail address is blacked out."
    if not results:
        file_id = request.messages[-1].text.split("file ")[-1].strip(" .")
        return ChatResponse(
            tool_calls=[
                ToolCall(id="d1", name="describeImage", arguments=json.dumps({"fileId": file_id}))
            ]
        )
    return "It shows: " + results[0].text


@needs_ocr
async def test_a_run_that_requires_neutralization_sends_the_image_blacked_out(db):
    import nyla_toolbox_media

    provider = ScriptedProvider(_agent_script, id="scripted", model="m")
    kernel = plugin_kernel(nyla_toolbox_media, provider, db=db, builtins=True)
    content = png_with_text("Invoice 4711", "Mail: anna.muster@example.ch")
    file_id = await _save(kernel, "invoice.png", content, "image/png")
    context = RunContext(user_id=USER, workflow_id="wf-vision", require_neutralization=True)
    config = AgentConfig(model="scripted:m", max_rounds=4, max_cost_chf=1.0)
    events = []
    async for event in kernel.agent.run(f"Describe file {file_id}.", config, context):
        events.append(event)
    results = [e for e in events if e.type == "TOOL_RESULT"]
    assert [(e.data["toolName"], e.data["success"]) for e in results] == [("describeImage", True)]
    final = next(e for e in events if e.type == "FINAL")
    assert final.text == "It shows: An invoice; the e-mail address is blacked out."
    [sent] = _images(provider)
    seen = ocr_text(base64.b64decode(sent.data_base64))
    assert "Invoice 4711" in seen and "anna.muster" not in seen
