"""A failure of a neutralizer is counted every time it happens in a call: a second text that
fails the same way in the same call is not memoized as neutralized (it was, when the gate
listed each error message once: the text then went out unneutralized for the rest of the run,
even after the neutralizer recovered)."""

from __future__ import annotations

from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession
from nyla.models.neutralize import Finding

SECRET = "Zorro"


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
