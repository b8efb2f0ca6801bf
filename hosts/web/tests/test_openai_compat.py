"""The OpenAI-compatible endpoint of a live ``nyla serve`` on loopback, driven by the official
``openai`` client: a streamed and a plain answer from a nyla agent (the scripted demo model),
the models a caller may use, and OpenAI's errors (401, 404, 400) as the client's exceptions.
Every object is checked against the required fields of OpenAI's OpenAPI spec."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
import pytest_asyncio

from .served import Served

pytestmark = [pytest.mark.db, pytest.mark.slow]

# required properties per OpenAI's OpenAPI spec (CreateChatCompletionResponse,
# CreateChatCompletionStreamResponse, Model, ListModelsResponse and their choices)
COMPLETION = {"id", "object", "created", "model", "choices"}
COMPLETION_CHOICE = {"index", "message", "finish_reason", "logprobs"}
MESSAGE = {"role", "content", "refusal"}
CHUNK = {"id", "object", "created", "model", "choices"}
CHUNK_CHOICE = {"index", "delta", "finish_reason"}
MODEL = {"id", "object", "created", "owned_by"}
FINISH_REASONS = {"stop", "length", "tool_calls", "content_filter", "function_call"}


def check_completion(raw: dict) -> None:
    assert raw.keys() >= COMPLETION and raw["object"] == "chat.completion"
    assert isinstance(raw["created"], int)
    for choice in raw["choices"]:
        assert choice.keys() >= COMPLETION_CHOICE
        assert choice["finish_reason"] in FINISH_REASONS
        assert choice["message"].keys() >= MESSAGE and choice["message"]["role"] == "assistant"
    usage = raw["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def check_chunk(raw: dict) -> None:
    assert raw.keys() >= CHUNK and raw["object"] == "chat.completion.chunk"
    assert isinstance(raw["created"], int)
    for choice in raw["choices"]:
        assert choice.keys() >= CHUNK_CHOICE
        assert choice["finish_reason"] in FINISH_REASONS | {None}


@pytest_asyncio.fixture
async def served(embedded_pg, tmp_path):
    server = Served(embedded_pg, tmp_path)
    try:
        yield server
    finally:
        server.stop()
        await server.drop()


async def test_the_openai_client_talks_to_a_nyla_agent(served):
    token = await served.prepare()
    served.start(delay_s=0.01)
    client = openai.AsyncOpenAI(
        api_key=token, base_url=f"{served.url}/v1", max_retries=0, timeout=60
    )
    models = await client.models.list()
    ids = [m.id for m in models.data]
    assert ids[0] == "nyla" and "nyla/demo:echo" in ids
    raw_models = httpx.get(f"{served.url}/v1/models", headers={"Authorization": f"Bearer {token}"})
    assert raw_models.json()["object"] == "list"
    assert all(m.keys() >= MODEL and m["object"] == "model" for m in raw_models.json()["data"])

    # streamed: the role first, the words as they come, the finish reason
    stream = await client.chat.completions.create(
        model="nyla/demo:echo",
        messages=[{"role": "user", "content": "tell me about penguins"}],
        stream=True,
    )
    chunks = [chunk async for chunk in stream]
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert len(pieces) > 3  # streamed word by word, not in one piece
    assert "penguins" in "".join(pieces)
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert len({c.id for c in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")

    # not streamed: one chat.completion with the whole answer and the run's tokens
    answer = await client.chat.completions.with_raw_response.create(
        model="nyla",
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "what about owls"}]},
        ],
    )
    raw = json.loads(answer.content)
    check_completion(raw)
    completion = answer.parse()
    assert "owls" in completion.choices[0].message.content
    assert completion.usage is not None and completion.usage.completion_tokens > 0

    # each completion is a host run the caller sees, like POST /api/runs
    headers = {"Authorization": f"Bearer {token}"}
    runs = httpx.get(f"{served.url}/api/runs", headers=headers).json()["runs"]
    assert len(runs) == 2 and {r["status"] for r in runs} == {"completed"}
    assert completion.id == f"chatcmpl-{next(r for r in runs if 'owls' in r['prompt'])['runId']}"


async def test_raw_stream_and_errors_in_openai_shape(served):
    token = await served.prepare()
    served.start(delay_s=0.01)
    headers = {"Authorization": f"Bearer {token}"}
    body = {"model": "nyla", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with httpx.stream(
        "POST", f"{served.url}/v1/chat/completions", json=body, headers=headers, timeout=60
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        data = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    for item in data[:-1]:
        check_chunk(json.loads(item))

    bad = openai.OpenAI(api_key="nyla_not-a-token", base_url=f"{served.url}/v1", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        bad.chat.completions.create(model="nyla", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 401
    assert caught.value.body["type"] == "authentication_error"

    good = openai.OpenAI(api_key=token, base_url=f"{served.url}/v1", max_retries=0, timeout=60)
    with pytest.raises(openai.NotFoundError) as missing:
        good.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert missing.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as bad_request:
        good.chat.completions.create(model="nyla", messages=[{"role": "assistant", "content": "x"}])
    assert "user message" in bad_request.value.body["message"]
    raw = httpx.post(f"{served.url}/v1/chat/completions", json={"model": "nyla"}, headers=headers)
    assert raw.status_code == 400
    assert set(raw.json()["error"]) == {"message", "type", "param", "code"}
    assert "messages" in raw.json()["error"]["message"]
    # nothing of the refused requests became a run
    assert len(httpx.get(f"{served.url}/api/runs", headers=headers).json()["runs"]) == 1

    # a run that calls a tool first streams the answer written after the tool's result
    stream = good.chat.completions.create(
        model="nyla",
        messages=[{"role": "user", "content": "which files do I have"}],
        stream=True,
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert "The tool said" in text and chunks[-1].choices[0].finish_reason == "stop"
