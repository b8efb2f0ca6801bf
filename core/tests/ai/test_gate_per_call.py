"""The pipeline keeps one gate per (neutralizers, require) and hands each call a gate of its
own: a call's failures stay the call's, and a change of the neutralizers is seen. A failure is
counted every time it happens in a call: a second text that fails the same way in the same call
is not memoized as neutralized (it was, when the gate listed each error message once: the text
then went out unneutralized for the rest of the run, even after the neutralizer recovered)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession
from nyla.ai.pipeline import AiPipeline
from nyla.errors import NeutralizationError
from nyla.models.ai import Message, Role
from nyla.models.neutralize import Finding

SECRET = "Zorro"
TEXT = f"ask {SECRET} about it"


class Flaky:
    """Finds ``SECRET``; raises on a text holding it while ``broken``."""

    id = "flaky"

    def __init__(self) -> None:
        self.broken = True

    def find(self, text: str) -> list[Finding]:
        at = text.find(SECRET)
        if self.broken and at >= 0:
            raise RuntimeError("detector down")
        return [] if at < 0 else [Finding(start=at, end=at + 5, category="NAME", value=SECRET)]


@dataclass
class ByValue:
    """A neutralizer equal to any other of the same category (a dataclass's ``==``)."""

    category: str
    id: str = "by-value"
    seen: list[str] = field(default_factory=list, compare=False)

    def find(self, text: str) -> list[Finding]:
        self.seen.append(text)
        at = text.find(SECRET)
        return (
            [] if at < 0 else [Finding(start=at, end=at + 5, category=self.category, value=SECRET)]
        )


def _pipeline(*neutralizers: Flaky | ByValue) -> AiPipeline:
    registry = {n.id: n for n in neutralizers}
    return AiPipeline(SimpleNamespace(neutralizers=registry, providers={}), {})


def _registry(ai: AiPipeline) -> dict[str, Flaky | ByValue]:
    registry: dict[str, Flaky | ByValue] = ai.plugins.neutralizers  # type: ignore[assignment]
    return registry


def test_each_call_gets_its_own_errors_and_a_partial_result_is_never_kept() -> None:
    flaky = Flaky()
    ai = _pipeline(flaky)
    session = NeutralizationSession()
    first, second = ai._gate(None), ai._gate(None)
    assert first is not second and first.errors is not second.errors
    assert first._signature is second._signature  # built once
    assert first.apply(TEXT, session) == TEXT
    assert len(first.errors) == 1 and second.errors == []
    # the same failure again, in the next call: its own error, so still not memoized (with
    # one errors list shared by both calls, the message would already be there and the
    # partial result would be kept)
    assert second.apply(TEXT, session) == TEXT
    assert len(second.errors) == 1 and len(first.errors) == 1
    flaky.broken = False
    third = ai._gate(None)
    assert third.apply(TEXT, session) == "ask [NAME_1] about it"
    assert third.errors == [] and third.replaced == 1 and second.replaced == 0


def test_a_failure_in_prepare_messages_stays_with_its_call() -> None:
    flaky = Flaky()
    ai = _pipeline(flaky)
    session = NeutralizationSession()
    messages = [Message(role=Role.SYSTEM, content="s"), Message(role=Role.USER, content=TEXT)]
    failed = ai._gate(None)
    assert failed.prepare_messages(messages, session)[0][1].content == TEXT
    flaky.broken = False
    ok = ai._gate(None)
    neutral, _ = ok.prepare_messages(messages, session)
    assert neutral[1].content == "ask [NAME_1] about it"
    assert ok.errors == [] and len(failed.errors) == 1


def test_the_gate_follows_the_plugins_neutralizers_and_the_setting() -> None:
    flaky = Flaky()
    flaky.broken = False
    ai = _pipeline(flaky)
    assert ai._gate(None).neutralizers == [flaky]
    other = ByValue("PERSON")
    _registry(ai)["by-value"] = other  # the registry changed in place
    gate = ai._gate(None)
    assert gate.neutralizers == [flaky, other]
    assert gate.apply(TEXT, NeutralizationSession()) == "ask [NAME_1] about it"
    del _registry(ai)["flaky"]
    assert ai._gate(None).apply(TEXT, NeutralizationSession()) == "ask [PERSON_1] about it"
    ai.settings["neutralize"] = False
    assert ai._gate(None).neutralizers == []
    assert ai._gate(SimpleNamespace(require_neutralization=True)).neutralizers == [other]


def test_an_equal_but_other_neutralizer_is_another_neutralizer() -> None:
    old = ByValue("PERSON")
    ai = _pipeline(old)
    ai._gate(None).apply("first", NeutralizationSession())
    new = ByValue("PERSON")
    assert new == old
    _registry(ai)["by-value"] = new
    gate = ai._gate(None)
    assert gate.neutralizers[0] is new
    gate.apply("second", NeutralizationSession())
    assert old.seen == ["first"] and new.seen == ["second"]


def test_required_without_neutralizers_is_blocked_every_call() -> None:
    ai = _pipeline()
    required = SimpleNamespace(require_neutralization=True)
    for _ in range(2):
        with pytest.raises(NeutralizationError):
            ai._gate(required)
    assert ai._gate(None).neutralizers == []


def test_a_text_failing_like_an_earlier_one_in_the_call_is_checked_again_later() -> None:
    flaky = Flaky()
    gate, session = NeutralizationGate([flaky]), NeutralizationSession()
    first, second = f"ask {SECRET} now", f"tell {SECRET} later"
    assert gate.apply(first, session) == first  # down: let through, the failure recorded
    assert gate.apply(second, session) == second  # the same failure again, same call
    assert len(gate.errors) == 2
    flaky.broken = False
    later = NeutralizationGate([flaky])  # the next call of the run, the detector back
    assert SECRET not in later.apply(first, session)
    assert SECRET not in later.apply(second, session)
    assert later.errors == []


def test_the_report_lists_each_failure_once() -> None:
    from nyla.ai.route import Route

    gate = NeutralizationGate([Flaky()])
    session = NeutralizationSession()
    gate.apply(f"a {SECRET}", session)
    gate.apply(f"b {SECRET}", session)
    route = Route.__new__(Route)
    route.gate, route.session = gate, session
    assert route.report().errors == ["neutralizer 'flaky' failed: RuntimeError('detector down')"]
