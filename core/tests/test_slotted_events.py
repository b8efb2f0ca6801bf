"""``AgentEvent`` is a slotted record (``SlottedWire``) that works like the pydantic model it
was: validated where it is built from outside, written out the same way, equal, usable as a
pydantic field. The loop builds its events without validation (``AgentEvent.of``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ValidationError

from nyla.agent.spec import RunSpec
from nyla.models.agent import AgentConfig, AgentEvent, AgentEventFields, EventType, RunContext
from nyla.models.ai import ChatRequest
from nyla.models.base import WireModel
from nyla.models.slotted import SlottedWire
from nyla.models.tools import Tool, ToolContext

VALUES: dict[str, Any] = {
    "type": EventType.TOOL_RESULT,
    "round": 3,
    "text": "read 5",
    "data": {"callId": "c1", "durationMs": 1.5, "at": datetime(2026, 12, 3, tzinfo=UTC)},
}


def test_a_validated_event_is_the_trusted_one_and_writes_out_as_the_model():
    event, trusted = AgentEvent(**VALUES), AgentEvent.of(*VALUES.values())
    fields = AgentEventFields(**VALUES)
    assert event == trusted and type(event) is AgentEvent
    assert (event.type, event.round, event.text) == (EventType.TOOL_RESULT, 3, "read 5")
    for write in ("model_dump", "to_wire", "model_dump_json"):
        assert getattr(event, write)() == getattr(fields, write)()
    assert event.model_dump(mode="json", by_alias=True) == fields.model_dump(
        mode="json", by_alias=True
    )
    assert AgentEvent(type=EventType.FINAL) == AgentEvent.of(EventType.FINAL, 0, "", {})
    assert repr(event).startswith("AgentEvent(type=<EventType.TOOL_RESULT")


@pytest.mark.parametrize(
    "wrong",
    [
        {"type": "NOT_A_TYPE"},
        {"type": EventType.STATUS, "round": "third"},
        {"type": EventType.STATUS, "text": 5},
        {"type": EventType.STATUS, "data": ["not", "a", "dict"]},
        {"round": 1},
    ],
)
def test_a_wrong_event_from_outside_is_refused(wrong: dict[str, Any]):
    with pytest.raises(ValidationError):
        AgentEvent(**wrong)
    with pytest.raises(ValidationError):
        AgentEvent.model_validate(wrong)


def test_events_read_back_from_their_wire_form():
    event = AgentEvent.of(EventType.STATUS, 2, "round", {"status": "round", "maxRounds": 8})
    wire = {"seq": 4, "runId": "r1", **event.to_wire()}  # a journal line: extra keys ignored
    assert AgentEvent.model_validate(wire) == event
    assert AgentEvent.model_validate_json(event.model_dump_json()) == event
    assert AgentEvent.model_validate(event) is event


def test_copy_equality_and_hash_are_the_models():
    event = AgentEvent.of(EventType.CHUNK, 1, "a", {})
    other = event.model_copy(update={"text": "b"})
    assert other.text == "b" and event.text == "a" and other != event
    deep = AgentEvent.of(EventType.ERROR, 1, "x", {"n": [1]}).model_copy(deep=True)
    assert deep == AgentEvent.of(EventType.ERROR, 1, "x", {"n": [1]})
    assert event != AgentEventFields(type=EventType.CHUNK, round=1, text="a")
    with pytest.raises(TypeError):
        hash(event)


def test_an_event_is_a_pydantic_field():
    class Journal(BaseModel):
        events: list[AgentEvent]

    journal = Journal.model_validate(
        {"events": [{"type": "FINAL", "text": "done"}, AgentEvent.of(EventType.CHUNK, 1, "x", {})]}
    )
    assert journal.events[0] == AgentEvent(type=EventType.FINAL, text="done")
    assert journal.model_dump(mode="json")["events"][1] == {
        "type": "CHUNK",
        "round": 1,
        "text": "x",
        "data": {},
    }
    assert Journal.model_validate_json(journal.model_dump_json()) == journal
    with pytest.raises(ValidationError):
        Journal.model_validate({"events": [{"type": "NOT_A_TYPE"}]})


def test_a_record_must_hold_its_models_fields():
    class Two(WireModel):
        a: int
        b: int = 0

    with pytest.raises(TypeError, match="fields"):

        class Wrong(SlottedWire):  # (a slot missing)
            __slots__ = ("a",)
            _fields: ClassVar[type[WireModel]] = Two


class PartArgs(BaseModel):
    part: int


async def read(args: PartArgs, ctx: ToolContext) -> str:
    return f"part {args.part}"


async def test_a_runs_events_equal_their_validated_wire_form(scripted, make_kernel, db):
    """Every event the loop builds without validation is what validating its wire form
    gives, and a model's bad argument is still refused at the tool."""

    def script(request: ChatRequest, i: int) -> Any:
        return [("read", {"part": 1}), ("read", {"part": "one"})] if i == 0 else "done"

    kernel = make_kernel(scripted(script), db=db, builtins=False)
    tool = Tool.from_model("read", "Read a part.", PartArgs, read, read_only=True)
    spec = RunSpec("go", config=AgentConfig(), context=RunContext(), tools=[tool])
    events = [e async for e in kernel.agent.loop(spec)]
    assert {e.type for e in events} >= {EventType.TOOL_CALL, EventType.TOOL_RESULT}
    for event in events:
        assert type(event) is AgentEvent
        assert AgentEvent.model_validate(event.to_wire()) == event
    results = [e.data for e in events if e.type is EventType.TOOL_RESULT]
    assert [r["success"] for r in results] == [True, False]
    assert results[1]["errorDetails"]["code"] == "INVALID_TYPE"
