"""A value the gate replaced once is replaced wherever it stands alone later in the run: the
model's answer comes back restored (its tool calls' arguments, its text), tools echo what they
were given, and a detector that needs the value's context (a name after a title) would let
the bare value through to the next call."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from nyla.agent.spec import RunSpec
from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession
from nyla.hookspecs import hookimpl
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import ChatRequest
from nyla.models.neutralize import Finding
from nyla.models.tools import Tool, ToolContext


class TitledNames:
    """Finds a name only after ``Herr`` (as the default neutralizer's context detectors do)."""

    id = "titled-names"

    def find(self, text: str) -> list[Finding]:
        return [
            Finding(start=m.start(1), end=m.end(1), category="NAME", value=m.group(1))
            for m in re.finditer(r"Herr (\w+ \w+)", text)
        ]


class NamesPlugin:
    @hookimpl
    def nyla_neutralizers(self) -> list[Any]:
        return [TitledNames()]


def test_a_value_found_once_is_replaced_where_it_stands_alone_later() -> None:
    gate, session = NeutralizationGate([TitledNames()]), NeutralizationSession()
    assert gate.apply("Write to Herr Hans Müller today.", session) == (
        "Write to Herr [NAME_1] today."
    )
    restored = session.restore('{"recipient": "[NAME_1]"}')
    assert restored == '{"recipient": "Hans Müller"}'
    assert gate.apply(restored, session) == '{"recipient": "[NAME_1]"}'


def test_a_bare_repeat_in_the_same_text_is_replaced_and_longer_words_are_not() -> None:
    gate, session = NeutralizationGate([TitledNames()]), NeutralizationSession()
    text = "Herr Hans Müller called. Hans Müller agreed. Hans Müllerstrasse 3, xHans Müller."
    assert gate.apply(text, session) == (
        "Herr [NAME_1] called. [NAME_1] agreed. Hans Müllerstrasse 3, xHans Müller."
    )


def test_a_text_seen_before_the_value_was_learned_is_neutralized_again() -> None:
    gate, session = NeutralizationGate([TitledNames()]), NeutralizationSession()
    assert gate.apply("Hans Müller agreed.", session) == "Hans Müller agreed."  # unknown yet
    gate.apply("Herr Hans Müller", session)
    assert gate.apply("Hans Müller agreed.", session) == "[NAME_1] agreed."


def test_placeholders_stay_and_nothing_known_changes_nothing() -> None:
    gate, session = NeutralizationGate([TitledNames()]), NeutralizationSession()
    gate.apply("Herr Hans Müller", session)
    assert gate.apply("[NAME_1] and [NAME_2]", session) == "[NAME_1] and [NAME_2]"
    assert gate.apply("no names here", NeutralizationSession()) == "no names here"


class Who(BaseModel):
    who: str


async def test_a_restored_name_never_reaches_the_next_model_call(
    scripted, make_kernel, db, run_events
) -> None:
    """The model sees ``[NAME_1]`` and calls a tool with it; the tool gets the real name and
    echoes it; the next request holds the placeholder in the call's arguments and the
    result, and the name nowhere."""
    given: list[str] = []

    async def remember(args: Who, ctx: ToolContext) -> str:
        given.append(args.who)
        return f"stored {args.who}"

    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("remember", {"who": "[NAME_1]"})]
        return "done"

    provider = scripted(script)
    kernel = make_kernel(provider, NamesPlugin(), db=db, builtins=False)
    events = await run_events(
        kernel.agent.loop(
            RunSpec(
                "Remember Herr Hans Müller.",
                config=AgentConfig(),
                context=RunContext(require_neutralization=True),
                tools=[Tool.from_model("remember", "remember", Who, remember)],
            ),
        )
    )
    assert events[-2].text == "done"
    assert given == ["Hans Müller"]  # the tool works with the real value
    second = provider.requests[1].messages
    sent = " ".join(m.text + " ".join(c.arguments for c in m.tool_calls) for m in second)
    assert "Hans Müller" not in sent
    [asked] = [c for m in second for c in m.tool_calls]
    assert json.loads(asked.arguments) == {"who": "[NAME_1]"}
    assert "stored [NAME_1]" in sent
