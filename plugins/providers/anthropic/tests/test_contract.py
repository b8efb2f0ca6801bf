"""The provider contract for Anthropic: the official SDK over a mock transport with Messages
API payloads and named server-sent events as Anthropic's API reference documents them."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import nyla_provider_anthropic
from nyla.sdk import ChatRequest, Message, Role
from nyla.testing.provider_contract import (
    ProviderContract,
    ProviderWire,
    Recorder,
    sdk_transport,
    sse_response,
)
from nyla_provider_anthropic import AnthropicProvider
from nyla_provider_anthropic.convert import ANSWER_TOOL_DESCRIPTION, JSON_ANSWER_TOOL

MODEL = "claude-sonnet-4-6"


def message(content: list[dict[str, Any]], stop: str, usage: tuple[int, int]) -> dict:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def stream(blocks: list[tuple[dict, list[dict]]], stop: str, usage: tuple[int, int]) -> Any:
    start = message([], None, (usage[0], 1))  # type: ignore[arg-type]
    events: list[tuple[str, dict]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, (block, deltas) in enumerate(blocks):
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        )
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": usage[1]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return sse_response(events, done=False, named=True)


class AnthropicWire(ProviderWire):
    def provider(self, handler: Any) -> AnthropicProvider:
        return AnthropicProvider(api_key="sk-ant-test", transport=sdk_transport(handler))

    def chat_reply(self, text: str, input_tokens: int, output_tokens: int) -> Any:
        body = message([{"type": "text", "text": text}], "end_turn", (input_tokens, output_tokens))
        return httpx.Response(200, json=body)

    def tool_call_reply(self, call_id: str, name: str, arguments: str) -> Any:
        block = {"type": "tool_use", "id": call_id, "name": name, "input": json.loads(arguments)}
        return httpx.Response(200, json=message([block], "tool_use", (60, 20)))

    def tool_result_in(self, request: Any, call_id: str) -> str | None:
        for m in json.loads(request.content)["messages"]:
            if m["role"] != "user" or isinstance(m["content"], str):
                continue
            for block in m["content"]:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                    content = block.get("content")
                    if isinstance(content, list):
                        return "".join(b.get("text", "") for b in content)
                    return content
        return None

    def stream_reply(self, chunks: list[str], input_tokens: int, output_tokens: int) -> Any:
        deltas = [{"type": "text_delta", "text": c} for c in chunks]
        return stream(
            [({"type": "text", "text": ""}, deltas)], "end_turn", (input_tokens, output_tokens)
        )

    def stream_tool_call_reply(self, call_id: str, name: str, argument_chunks: list[str]) -> Any:
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in argument_chunks]
        return stream([(block, deltas)], "tool_use", (70, 15))

    def tool_choice_fields(self, choice: Any) -> dict[str, Any]:
        """``{"type": "none" | "any"}`` or ``{"type": "tool", "name": ...}``."""
        if choice.mode == "tool":
            return {"tool_choice": {"type": "tool", "name": choice.name}}
        return {"tool_choice": {"type": {"required": "any"}.get(choice.mode, choice.mode)}}

    def stop_fields(self, stop: list[str]) -> dict[str, Any]:
        return {"stop_sequences": stop}

    @staticmethod
    def _answer_tool(response_format: Any) -> tuple[str, dict]:
        if response_format.type == "json_schema":
            return response_format.name, response_format.json_schema
        return JSON_ANSWER_TOOL, {"type": "object"}

    def response_format_fields(self, response_format: Any) -> dict[str, Any]:
        """JSON output as Anthropic documents it: one tool whose input schema is the answer's,
        forced by ``tool_choice``."""
        name, schema = self._answer_tool(response_format)
        tool = {"name": name, "description": ANSWER_TOOL_DESCRIPTION, "input_schema": schema}
        return {"tools": [tool], "tool_choice": {"type": "tool", "name": name}}

    def json_reply(self, response_format: Any, value: Any) -> Any:
        name, _ = self._answer_tool(response_format)
        block = {"type": "tool_use", "id": "toolu_json1", "name": name, "input": value}
        return httpx.Response(200, json=message([block], "tool_use", (80, 25)))

    def stream_json_reply(self, response_format: Any, value: Any) -> Any:
        name, _ = self._answer_tool(response_format)
        text = json.dumps(value)
        pieces = [text[: len(text) // 2], text[len(text) // 2 :]]
        block = {"type": "tool_use", "id": "toolu_json2", "name": name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
        return stream([(block, deltas)], "tool_use", (80, 25))

    def error_reply(self, status: int, retry_after: float | None = None) -> Any:
        kinds = {
            401: ("authentication_error", "invalid x-api-key"),
            429: ("rate_limit_error", "Number of requests has exceeded your rate limit"),
            529: ("overloaded_error", "Overloaded"),
        }
        kind, text = kinds.get(status, ("api_error", "Internal server error"))
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        body = {"type": "error", "error": {"type": kind, "message": text}}
        return httpx.Response(status, json=body, headers=headers)


class TestAnthropicContract(ProviderContract):
    auth_env_var = "ANTHROPIC_API_KEY"
    chat_model = f"anthropic:{MODEL}"
    # tool_use input is a JSON object in a complete message; only a stream can break it
    malformed_arguments_via = "stream"

    @pytest.fixture
    def plugin(self) -> Any:
        return nyla_provider_anthropic

    @pytest.fixture
    def wire(self) -> AnthropicWire:
        return AnthropicWire()


async def test_system_prompt_is_top_level_and_tool_results_follow_tool_use() -> None:
    from nyla.sdk import ToolCall, ToolDefinition

    wire = AnthropicWire()
    rec = Recorder(wire.chat_reply("done", 5, 1))
    provider = wire.provider(rec)
    call = ToolCall(id="toolu_1", name="lookup", arguments='{"q": "x"}')
    request = ChatRequest(
        model=f"anthropic:{MODEL}",
        messages=[
            Message(role=Role.SYSTEM, content="You are terse."),
            Message(role=Role.USER, content="find x"),
            Message(role=Role.ASSISTANT, content="Looking.", tool_calls=[call]),
            Message(role=Role.TOOL, tool_call_id="toolu_1", content="found"),
            Message(role=Role.USER, content="and now?"),
        ],
        tools=[ToolDefinition(name="lookup", description="d", parameters={"type": "object"})],
        max_output_tokens=256,
    )
    await provider.chat(request)
    sent = rec.requests[0]
    body = json.loads(sent.content)
    credentials = sent.headers.get("x-api-key") or sent.headers.get("authorization", "")
    assert credentials.endswith("sk-ant-test")
    assert "anthropic-version" in sent.headers
    assert sent.url.path == "/v1/messages"
    assert body["system"] == "You are terse."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "lookup",
        "input": {"q": "x"},
    }
    assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result", "text"]
    assert body["tools"][0]["input_schema"] == {"type": "object"}
    assert body["max_tokens"] == 256


async def test_overloaded_529_is_a_retryable_server_error() -> None:
    from nyla.sdk import ProviderServerError

    wire = AnthropicWire()
    provider = wire.provider(Recorder(wire.error_reply(529)))
    with pytest.raises(ProviderServerError) as info:
        await provider.chat(
            ChatRequest(model=f"anthropic:{MODEL}", messages=[Message(role=Role.USER, content="x")])
        )
    assert info.value.retryable and info.value.status_code == 529


async def test_json_answer_with_tools_lets_the_model_call_a_tool_or_answer() -> None:
    """With the caller's tools offered, a JSON answer is one more tool and tool_choice
    ``any``: the model calls a real tool (kept as a call) or the answer tool (the text)."""
    from nyla.sdk import ResponseFormat, ToolDefinition

    wire = AnthropicWire()
    fmt = ResponseFormat.structured("forecast", {"type": "object"})
    tool = ToolDefinition(name="lookup", description="d", parameters={"type": "object"})
    rec = Recorder(wire.tool_call_reply("toolu_9", "lookup", '{"q": "Bern"}'))
    request = ChatRequest(
        model=f"anthropic:{MODEL}",
        messages=[Message(role=Role.USER, content="forecast?")],
        tools=[tool],
        response_format=fmt,
    )
    response = await wire.provider(rec).chat(request)
    body = json.loads(rec.requests[0].content)
    assert [t["name"] for t in body["tools"]] == ["lookup", "forecast"]
    assert body["tool_choice"] == {"type": "any"}
    assert [c.name for c in response.tool_calls] == ["lookup"] and response.content == ""
