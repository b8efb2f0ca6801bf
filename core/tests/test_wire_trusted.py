"""``WireModel.trusted``: the constructor without validation for internal, already-typed
paths (a run's own request, the provider request built from a validated one). It must give
what validation gives, refuse what it cannot fill, and leave every boundary validating."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from nyla.agent.spec import RunSpec
from nyla.models.agent import AgentConfig, AgentEventFields, EventType, RunContext, ToolCallLog
from nyla.models.ai import (
    AiCallRequest,
    AiCallResponse,
    ChatRequest,
    Message,
    OperationType,
    Role,
    ToolCall,
    ToolDefinition,
    Usage,
)
from nyla.models.base import WireModel
from nyla.models.tools import Tool

CALL = ToolCall(id="c1", name="ping", arguments='{"n": 1}')
MESSAGES = [
    Message(role=Role.SYSTEM, content="be brief"),
    Message(role=Role.USER, content="go"),
    Message(role=Role.ASSISTANT, tool_calls=[CALL]),
    Message(role=Role.TOOL, content="pong", tool_call_id="c1", name="ping"),
]
DEFINITION = ToolDefinition(name="ping", description="Ping.", parameters={"type": "object"})

CASES: list[tuple[type[WireModel], dict[str, Any]]] = [
    (Message, {"role": Role.ASSISTANT, "content": "x", "tool_calls": [CALL]}),
    (Message, {"role": Role.USER}),
    (AgentEventFields, {"type": EventType.TOOL_CALL, "round": 2, "data": {"callId": "c1"}}),
    (
        ToolCallLog,
        {"round": 1, "call_id": "c1", "tool_name": "ping", "arguments": "{}", "success": True},
    ),
    (
        AiCallRequest,
        {
            "operation": OperationType.AGENT,
            "messages": MESSAGES,
            "tools": [DEFINITION],
            "context": RunContext(user_id="u"),
            "max_cost_chf": 0.5,
        },
    ),
    (ChatRequest, {"model": "m", "messages": MESSAGES, "tools": [DEFINITION]}),
    (AiCallResponse, {"content": "done", "usage": Usage(input_tokens=3), "model": "m"}),
]


@pytest.mark.parametrize(("cls", "values"), CASES, ids=[c.__name__ for c, _ in CASES])
def test_a_trusted_instance_is_the_validated_one(cls: type[WireModel], values: dict[str, Any]):
    trusted, validated = cls.trusted(**values), cls(**values)
    assert type(trusted) is cls
    assert trusted == validated
    assert trusted.model_fields_set == validated.model_fields_set
    assert trusted.model_dump() == validated.model_dump()
    assert trusted.to_wire() == validated.to_wire()
    assert trusted.model_dump_json() == validated.model_dump_json()
    again = cls.model_validate_json(
        trusted.model_dump_json()
    )  # (``Any`` fields come back as dicts)
    assert again.model_dump_json() == validated.model_dump_json()
    field = next(iter(cls.model_fields))
    assert trusted.model_copy(update={field: values.get(field)}) == validated.model_copy(
        update={field: values.get(field)}
    )


def test_defaults_are_fresh_for_every_instance():
    first, second = Message.trusted(role=Role.USER), Message.trusted(role=Role.USER)
    first.tool_calls.append(CALL)
    assert second.tool_calls == [] and Message(role=Role.USER).tool_calls == []

    class WithList(WireModel):
        items: list[int] = [1]  # a mutable default: validation copies it

    one = WithList.trusted()
    one.items.append(2)
    assert WithList.trusted().items == [1]


def test_unknown_and_missing_fields_are_refused():
    with pytest.raises(TypeError, match=r"unknown fields \['rol'\], missing \['role'\]"):
        Message.trusted(rol=Role.USER)
    with pytest.raises(TypeError, match=r"unknown fields \['colour'\]"):
        Message.trusted(role=Role.USER, colour="red")


def test_a_model_with_private_attributes_is_refused():
    class Private(WireModel):
        name: str = ""
        _seen: int = 0

    with pytest.raises(TypeError, match="private or extra"):
        Private.trusted(name="x")


def test_the_public_constructors_still_validate():
    with pytest.raises(ValidationError):
        AiCallRequest(operation=OperationType.AGENT, messages="not a list")
    with pytest.raises(ValidationError):
        ChatRequest(model="m", messages=[{"role": "nobody"}])
    with pytest.raises(ValidationError):  # the options check of an answer's form
        AiCallRequest(operation=OperationType.AGENT, messages=MESSAGES, stop=[""])


class Ping(BaseModel):
    n: int


async def test_a_run_s_requests_equal_validated_ones(scripted, make_kernel, db):
    """The agent's request and the provider's are built trusted: what the provider gets is
    what validation makes of it, and a model's bad arguments are still refused at the tool."""

    async def ping(args: Ping, ctx: Any) -> str:
        return f"pong {args.n}"

    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [CALL, ToolCall(id="c2", name="ping", arguments='{"n": "many"}')]
        return "done"

    provider = scripted(script)
    kernel = make_kernel(provider, db=db, builtins=False)
    tool = Tool.from_model("ping", "Ping.", Ping, ping, read_only=True)
    spec = RunSpec("go", config=AgentConfig(stream=False), context=RunContext(), tools=[tool])
    events = [e async for e in kernel.agent.loop(spec)]
    assert len(provider.requests) == 2
    for request in provider.requests:
        assert request == ChatRequest.model_validate(request.model_dump())
        assert request.messages and request.tools[0].name == "ping"
    results = [e.data for e in events if e.type is EventType.TOOL_RESULT]
    assert [r["success"] for r in results] == [True, False]
    assert results[1]["errorDetails"]["code"] == "INVALID_TYPE"


def test_copied_is_the_model_copy():
    """``copied`` (a tool call's context, made from the run's base) gives what
    ``model_copy(update=...)`` gives, and refuses what it cannot copy."""
    from pydantic import PrivateAttr

    from nyla.models.base import copied
    from nyla.models.tools import ToolContext

    def on_charge(chf: float) -> None:
        return None

    base = ToolContext.model_construct(run=RunContext(user_id="u"), run_id="r", action_number=1)
    update = {"round": 3, "task_number": 2, "call_id": "c1", "on_charge": on_charge}
    made, copy = copied(base, **update), base.model_copy(update=update)
    assert type(made) is ToolContext and made == copy
    assert made.model_fields_set == copy.model_fields_set
    assert made.__dict__ == copy.__dict__ and made.__dict__ is not base.__dict__
    assert base.round == 0 and base.call_id is None  # the base is left as it was
    with pytest.raises(TypeError, match="unknown fields"):
        copied(base, rounds=3)

    class Private(BaseModel):
        n: int = 0
        _seen: int = PrivateAttr(default=0)

    with pytest.raises(TypeError, match="private or extra"):
        copied(Private(), n=1)
