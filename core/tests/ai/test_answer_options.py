"""The answer options of a chat request (tool_choice, stop, response_format): typed models,
the AI service's capability preflight (one place, before any provider call), and the
scripted model honouring them."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from nyla import (
    AiCallRequest,
    ChatRequest,
    Message,
    ModelCapabilities,
    ResponseFormat,
    Role,
    ToolChoice,
    ToolDefinition,
    UnsupportedCapabilityError,
)
from nyla.testing import ScriptedProvider
from nyla.testing.scripted import ScriptedPlugin

WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather of a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _user(text: str) -> list[Message]:
    return [Message(role=Role.USER, content=text)]


def _request(**kw: object) -> AiCallRequest:
    return AiCallRequest(operation="agent", messages=_user("hi"), **kw)  # type: ignore[arg-type]


# ---- the typed models ----------------------------------------------------------------------


def test_tool_choice_accepts_the_modes_and_names_a_tool() -> None:
    assert ToolChoice.model_validate("required").mode == "required"
    assert ToolChoice.tool("get_weather") == ToolChoice(mode="tool", name="get_weather")
    assert ToolChoice.model_validate({"name": "x"}).mode == "tool"
    with pytest.raises(ValidationError, match="must name the tool"):
        ToolChoice(mode="tool")
    with pytest.raises(ValidationError, match="names no tool"):
        ToolChoice(mode="none", name="x")
    with pytest.raises(ValidationError):
        ToolChoice.model_validate("any")


def test_response_format_needs_a_named_schema() -> None:
    fmt = ResponseFormat.structured("count", SCHEMA)
    assert fmt.to_wire() == {
        "type": "json_schema",
        "name": "count",
        "jsonSchema": SCHEMA,
        "strict": True,
    }
    assert ResponseFormat.model_validate("json_object").is_json
    with pytest.raises(ValidationError, match="needs a name"):
        ResponseFormat(type="json_schema", json_schema=SCHEMA)
    with pytest.raises(ValidationError, match="needs the JSON schema"):
        ResponseFormat(type="json_schema", name="count")
    with pytest.raises(ValidationError, match="takes no schema"):
        ResponseFormat(type="json_object", json_schema=SCHEMA)


def test_contradicting_options_are_refused_when_the_request_is_built() -> None:
    with pytest.raises(ValidationError, match="needs tools"):
        _request(tool_choice="required")
    with pytest.raises(ValidationError, match="not among the tools"):
        _request(tools=[WEATHER], tool_choice=ToolChoice.tool("get_time"))
    with pytest.raises(ValidationError, match="must not be empty"):
        _request(stop=[""])
    # "none" without tools is harmless: nothing to choose from
    assert _request(tool_choice="none").required_capabilities() == ()


def test_required_capabilities_follow_the_options() -> None:
    request = _request(
        tools=[WEATHER],
        tool_choice="none",
        stop=["END"],
        response_format=ResponseFormat.structured("count", SCHEMA),
    )
    assert request.required_capabilities() == (
        "tool_choice",
        "stop_sequences",
        "structured_output",
    )
    assert _request(tools=[WEATHER], tool_choice="auto").required_capabilities() == ()
    assert _request(response_format="text").required_capabilities() == ()
    assert _request(response_format="json_object").required_capabilities() == ("json_mode",)
    # each option alone needs its flag; none at all (the usual call) needs nothing
    assert _request(stop=["END"]).required_capabilities() == ("stop_sequences",)
    assert _request(tools=[WEATHER], tool_choice="required").required_capabilities() == (
        "tool_choice",
    )
    assert _request(tools=[WEATHER]).required_capabilities() == ()


def test_unset_options_stay_off_the_wire_so_old_recordings_match() -> None:
    plain = ChatRequest(model="m", messages=_user("hi"))
    assert not {"toolChoice", "stop", "responseFormat"} & set(plain.to_wire())
    full = ChatRequest(model="m", messages=_user("hi"), stop=["END"], response_format="json_object")
    assert full.to_wire()["stop"] == ["END"]
    assert full.to_wire()["responseFormat"]["type"] == "json_object"


# ---- the preflight -------------------------------------------------------------------------


def _plain_model(id: str, **declared: bool) -> ScriptedProvider:
    return ScriptedProvider(
        lambda request, index: '{"n": 1}',
        id=id,
        capabilities=ModelCapabilities(tools=True, streaming=True, **declared),
        quality_rank=90,
    )


@pytest.mark.parametrize(
    ("options", "capability"),
    [
        ({"tools": [WEATHER], "tool_choice": ToolChoice.tool("get_weather")}, "tool_choice"),
        ({"stop": ["END"]}, "stop_sequences"),
        ({"response_format": "json_object"}, "json_mode"),
        ({"response_format": ResponseFormat.structured("count", SCHEMA)}, "structured_output"),
    ],
)
async def test_an_explicit_model_lacking_a_capability_is_refused_before_the_call(
    make_kernel, options: dict, capability: str
) -> None:
    plain = _plain_model("plain")
    able = ScriptedProvider(lambda request, index: '{"n": 1}', id="able")
    kernel = make_kernel(ScriptedPlugin(plain, able), builtins=False)
    with pytest.raises(UnsupportedCapabilityError) as info:
        await kernel.ai.call(_request(model="plain:model", **options))
    assert info.value.capability == capability and info.value.model == "plain:model"
    assert "able:model" in str(info.value), "the error names the models that can"
    assert plain.requests == [] and able.requests == [], "a provider was called"


async def test_the_selector_passes_over_models_lacking_a_capability(make_kernel) -> None:
    best = _plain_model("best")  # ranks first, but has no JSON mode
    able = ScriptedProvider(lambda request, index: '{"n": 2}', id="able")
    kernel = make_kernel(ScriptedPlugin(best, able), builtins=False)
    response = await kernel.ai.call(_request(response_format="json_object"))
    assert response.model == "able:model" and json.loads(response.content) == {"n": 2}
    assert best.requests == []
    sent = able.requests[0]
    assert sent.response_format is not None and sent.response_format.type == "json_object"
    # without the option the better-ranked model answers
    assert (await kernel.ai.call(_request())).model == "best:model"


async def test_no_model_declaring_a_capability_is_a_typed_error(make_kernel) -> None:
    kernel = make_kernel(ScriptedPlugin(_plain_model("plain")), builtins=False)
    with pytest.raises(UnsupportedCapabilityError, match="no structured_output") as info:
        await kernel.ai.call(_request(response_format=ResponseFormat.structured("count", SCHEMA)))
    assert info.value.capability == "structured_output"


async def test_streaming_goes_through_the_same_preflight(make_kernel) -> None:
    plain = _plain_model("plain")
    kernel = make_kernel(ScriptedPlugin(plain), builtins=False)
    with pytest.raises(UnsupportedCapabilityError):
        [d async for d in kernel.ai.stream(_request(model="plain:model", stop=["END"]))]
    assert plain.requests == []


# ---- the scripted model honours the options ------------------------------------------------


async def test_scripted_model_stops_at_the_first_stop_sequence(make_kernel) -> None:
    model = ScriptedProvider(lambda request, index: "one, two END three")
    kernel = make_kernel(ScriptedPlugin(model), builtins=False)
    response = await kernel.ai.call(_request(stop=["END", "two"]))
    assert response.content == "one, " and response.finish_reason == "stop"
    streamed = [d async for d in kernel.ai.stream(_request(stop=["END"]))]
    assert streamed[-1].response.content == "one, two "


@pytest.mark.parametrize(
    ("reply", "choice", "error"),
    [
        ([("get_weather", {"city": "Bern"})], "none", "although tool_choice is 'none'"),
        ("plain text", "required", "made no tool call"),
        ([("get_time", {})], ToolChoice.tool("get_weather"), "forces 'get_weather'"),
    ],
)
async def test_scripted_model_refuses_replies_breaking_tool_choice(
    make_kernel, reply: object, choice: object, error: str
) -> None:
    model = ScriptedProvider(lambda request, index: reply)
    kernel = make_kernel(ScriptedPlugin(model), builtins=False)
    with pytest.raises(Exception, match=error):
        await kernel.ai.call(_request(tools=[WEATHER], tool_choice=choice))


async def test_scripted_model_passes_the_options_and_checks_json(make_kernel) -> None:
    model = ScriptedProvider(lambda request, index: "not json" if index else '{"n": 3}')
    kernel = make_kernel(ScriptedPlugin(model), builtins=False)
    fmt = ResponseFormat.structured("count", SCHEMA)
    first = await kernel.ai.call(_request(response_format=fmt))
    assert json.loads(first.content) == {"n": 3}
    assert model.requests[0].response_format == fmt
    with pytest.raises(Exception, match="not JSON"):
        await kernel.ai.call(_request(response_format=fmt))
