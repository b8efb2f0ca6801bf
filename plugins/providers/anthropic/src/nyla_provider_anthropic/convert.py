"""Conversion between nyla's normalized messages and Anthropic's Messages API: the system
prompt is a top-level field, tool calls are ``tool_use`` blocks, tool results are
``tool_result`` blocks inside the next user turn.

JSON answers: the Messages API has no JSON mode; Anthropic documents JSON output as a tool
whose ``input_schema`` is the answer's schema, forced with ``tool_choice``. A
``response_format`` becomes such an answer tool, and its ``tool_use`` input comes back as
the answer's text (never as a tool call)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from nyla.sdk import (
    ChatRequest,
    ChatResponse,
    ImagePart,
    Message,
    ResponseFormat,
    Role,
    TextPart,
    ToolCall,
    ToolChoice,
    ToolDefinition,
    Usage,
)

#: the answer tool's name for JSON mode (a structured output uses its schema's name)
JSON_ANSWER_TOOL = "json_answer"
ANSWER_TOOL_DESCRIPTION = (
    "Give your final answer through this tool: its input is the answer, as JSON."
)


def _blocks(message: Message) -> list[dict[str, Any]]:
    if isinstance(message.content, str):
        return [{"type": "text", "text": message.content}] if message.content else []
    out: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextPart):
            if part.text:
                out.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            if part.url:
                out.append({"type": "image", "source": {"type": "url", "url": part.url}})
            else:
                out.append(
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": part.mime_type,
                            "data": part.data_base64 or "",
                        },
                    }
                )
    return out


def tool_input(arguments: str) -> dict[str, Any]:
    """A tool call's JSON arguments as the object Anthropic expects; malformed arguments the
    model sent earlier are passed back under ``_invalid_arguments`` rather than dropped."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {"_invalid_arguments": arguments}
    return value if isinstance(value, dict) else {"_invalid_arguments": arguments}


def to_anthropic(messages: Iterable[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """``(system, messages)`` for the Messages API. Consecutive user-side content (tool
    results, user text) is merged into one user turn, as the API requires."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": list(blocks)})

    for m in messages:
        if m.role is Role.SYSTEM:
            if m.text:
                system.append(m.text)
        elif m.role is Role.TOOL:
            push(
                "user",
                [{"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.text}],
            )
        elif m.role is Role.ASSISTANT:
            blocks = _blocks(m)
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": tool_input(c.arguments)}
                for c in m.tool_calls
            ]
            push("assistant", blocks)
        else:
            push("user", _blocks(m))
    return ("\n\n".join(system) or None), out


def to_tools(tools: Iterable[ToolDefinition]) -> list[dict[str, Any]]:
    """Tool definitions with ``input_schema``."""
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


def answer_tool(response_format: ResponseFormat) -> dict[str, Any]:
    """The tool carrying a JSON answer: the schema of a structured output (named as it is),
    or any JSON object for JSON mode."""
    if response_format.type == "json_schema":
        name, schema = response_format.name, response_format.json_schema
    else:
        name, schema = JSON_ANSWER_TOOL, {"type": "object"}
    return {"name": name, "description": ANSWER_TOOL_DESCRIPTION, "input_schema": schema}


def to_tool_choice(choice: ToolChoice) -> dict[str, Any]:
    """``tool_choice``: ``{"type": "auto" | "none" | "any"}`` (``any``: some tool call,
    Anthropic's word for required) or ``{"type": "tool", "name": ...}``."""
    if choice.mode == "tool":
        return {"type": "tool", "name": choice.name}
    return {"type": {"required": "any"}.get(choice.mode, choice.mode)}


def answer_options(request: ChatRequest) -> tuple[dict[str, Any], str | None]:
    """The body fields for tools, ``tool_choice``, ``stop_sequences`` and a JSON answer, and
    the answer tool's name (``None`` without one). A JSON answer is forced through its tool;
    with the caller's tools offered too the model must call one of them or answer
    (``any``); a forced call of the caller's tools leaves no room for an answer this turn."""
    body: dict[str, Any] = {}
    tools = to_tools(request.tools)
    choice, fmt = request.tool_choice, request.response_format
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    answer = None
    if fmt is not None and fmt.is_json and not (choice and choice.forces_call and tools):
        tool = answer_tool(fmt)
        answer = tool["name"]
        tools = [*(tools if choice is None or choice.mode != "none" else []), tool]
        forced = {"type": "tool", "name": answer} if len(tools) == 1 else {"type": "any"}
        body["tool_choice"] = forced
    elif choice is not None and tools:
        body["tool_choice"] = to_tool_choice(choice)
    if tools:
        body["tools"] = tools
    return body, answer


def usage_of(data: dict[str, Any] | None) -> Usage:
    """Usage with cache reads and writes counted as input."""
    data = data or {}
    return Usage(
        input_tokens=int(data.get("input_tokens") or 0)
        + int(data.get("cache_creation_input_tokens") or 0)
        + int(data.get("cache_read_input_tokens") or 0),
        output_tokens=int(data.get("output_tokens") or 0),
    )


def from_anthropic(
    data: dict[str, Any], model: str | None = None, answer: str | None = None
) -> ChatResponse:
    """A Messages API answer as a :class:`ChatResponse`; the input of the answer tool
    ``answer`` is the answer's JSON text."""
    text: list[str] = []
    calls: list[ToolCall] = []
    stop_reason = data.get("stop_reason")
    for block in data.get("content") or []:
        if block.get("type") == "text":
            text.append(block.get("text") or "")
        elif block.get("type") == "tool_use" and answer and block.get("name") == answer:
            text = [json.dumps(block.get("input") or {}, ensure_ascii=False)]
            stop_reason = "end_turn" if stop_reason == "tool_use" else stop_reason
        elif block.get("type") == "tool_use":
            calls.append(
                ToolCall(
                    id=block["id"],
                    name=block["name"],
                    arguments=json.dumps(block.get("input") or {}, ensure_ascii=False),
                )
            )
    return ChatResponse(
        content="".join(text),
        tool_calls=calls,
        usage=usage_of(data.get("usage")),
        finish_reason=stop_reason,
        model=model or data.get("model"),
    )
