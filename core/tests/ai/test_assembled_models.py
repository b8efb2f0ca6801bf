"""The AI service's answer and provider request are built without validation
(:func:`nyla.ai.route.assembled`): each must equal, dump and copy like the validated model
made of the same values, with every field set, in the fields' order."""

from __future__ import annotations

from typing import Any

import nyla
from nyla.ai.neutralize import NeutralizationSession
from nyla.ai.retry import RetryPolicy
from nyla.models.ai import (
    AiCallRequest,
    AiCallResponse,
    ChatRequest,
    ChatResponse,
    Message,
    OperationType,
    Role,
    ToolCall,
    ToolDefinition,
    Usage,
)
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider


def same_as_validated(model: Any) -> None:
    cls = type(model)
    values = {name: getattr(model, name) for name in cls.model_fields}
    validated = cls(**values)
    assert model == validated
    # the four slots are set as validation sets them (by their setters, see assembled)
    assert (model.__pydantic_extra__, model.__pydantic_private__) == (None, None)
    assert type(model.__pydantic_fields_set__) is set and type(model.__dict__) is dict
    assert list(model.__dict__) == list(cls.model_fields)  # every field, in order
    assert model.model_fields_set == validated.model_fields_set == set(cls.model_fields)
    assert model.model_dump() == validated.model_dump()
    assert model.to_wire() == validated.to_wire()
    first = next(iter(cls.model_fields))
    assert model.model_copy(update={first: None}) == validated.model_copy(update={first: None})


def tool_turn(request: ChatRequest, index: int) -> ChatResponse:
    calls = [
        ToolCall(id="a", name="read", arguments='{"x": 1}'),
        ToolCall(id="b", name="read", arguments="[1]"),  # not an object: reported
    ]
    return ChatResponse(
        tool_calls=calls,
        finish_reason="tool_calls",
        usage=Usage(input_tokens=7, output_tokens=3),
        metadata={"vendor": {"id": index}},
    )


async def test_the_answer_and_the_provider_request_equal_validated_models(make_kernel) -> None:
    from nyla.ai.service import AiService

    provider = ScriptedProvider(tool_turn, id="s", price_input=1.0, price_output=2.0)
    kernel = make_kernel(ScriptedPlugin(provider), builtins=False)
    ai = AiService(kernel.plugins, None, retry=RetryPolicy())
    tools = [ToolDefinition(name="read", description="reads", parameters={"type": "object"})]
    request = AiCallRequest(
        operation=OperationType.AGENT,
        messages=[Message(role=Role.USER, content="hello")],
        tools=tools,
        temperature=0.3,
        max_output_tokens=200,
        stop=["END"],
        neutralization=NeutralizationSession(),
    )
    response = await ai.call(request)
    same_as_validated(response)
    same_as_validated(response.neutralization)
    assert response.metadata == {"vendor": {"id": 0}}
    assert [e.id for e in response.invalid_tool_arguments] == ["b"]
    assert response.usage == Usage(input_tokens=7, output_tokens=3)
    assert response.cost_chf == (7 * 1.0 + 3 * 2.0) / 1e6
    sent = provider.requests[0]
    same_as_validated(sent)
    assert sent.stop == ["END"] and sent.temperature == 0.3 and sent.max_output_tokens == 200
    assert sent.tools == tools and sent.model == "s:model"
    assert sent.operation is OperationType.AGENT
    # the provider's metadata is the answer's copy, not the provider's own dict
    assert isinstance(response, AiCallResponse)
    response.metadata["added"] = True
    assert "added" not in (await ai.call(request)).metadata


def test_invalid_tool_arguments_say_what_json_loads_says() -> None:
    """The scanner's short way for an object's text decides nothing json.loads would not."""
    import json

    from nyla.ai.route import invalid_tool_arguments

    texts = [
        '{"round": 3}',
        "{}",
        "",
        "[1]",
        "{",
        "}",
        '{"a": 1}}',
        '{"a": 1} {"b": 2}',
        '{"a": 1} ',
        ' {"a": 1}',
        '{"a": NaN}',
        '{"a": "\x00"}',
        '{"a": "\\ud800"}',
        '{"a": [' * 100_000 + "]}" * 100_000,  # deep nesting: an error, never fatal
        '{"a": 1, "a": 2}',
        '"{}"',
    ]
    calls = [ToolCall(id=str(i), name="t", arguments=t) for i, t in enumerate(texts)]
    expected = {}
    for call in calls:
        try:
            value = json.loads(call.arguments or "{}")
        except Exception as exc:
            expected[call.id] = f"invalid JSON: {type(exc).__name__}"
        else:
            if not isinstance(value, dict):
                expected[call.id] = "arguments are not a JSON object"
    found = {e.id: e.error for e in invalid_tool_arguments(calls)}
    assert found == expected
    assert set(found) == {"3", "4", "5", "6", "7", "11", "13", "15"}


class _Nothing:
    id = "nothing"

    def find(self, text: str) -> list[Any]:
        return []


class _Neutralizers:
    @nyla.hookimpl
    def nyla_neutralizers(self) -> list[Any]:
        return [_Nothing()]


async def test_the_content_opt_in_is_read_again_when_it_changes(make_kernel, monkeypatch) -> None:
    """The opt-in is kept under the settings' fingerprint: setting or removing it between two
    calls applies to the next call (fails when it is read once and kept)."""
    from nyla.ai.service import AiService
    from nyla.tracing import listening

    provider = ScriptedProvider(lambda r, i: "answer", id="s")
    kernel = make_kernel(ScriptedPlugin(provider), _Neutralizers(), builtins=False)
    ai = AiService(kernel.plugins, None, retry=RetryPolicy())
    request = AiCallRequest(operation="agent", messages=[Message(role=Role.USER, content="hi")])
    calls: list[Any] = []
    with listening(calls.append):
        for opt_in in ("", "neutralized", "", "neutralised"):
            monkeypatch.setenv("NYLA_OTEL_CAPTURE_CONTENT", opt_in)
            await ai.call(request)
    assert [c.prompt for c in calls] == [None, "user: hi", None, "user: hi"]
    assert [c.answer for c in calls] == [None, "answer", None, "answer"]
