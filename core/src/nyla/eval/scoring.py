"""Scoring one answer of the data agent: ``patternOk`` (right tools and filters),
``forbidOk`` (no anti-pattern executed), ``numericOk`` (the expected numbers are in the
answer) and ``accuracyOk`` (all three)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from nyla.features.data_agent import RecordedCall
from nyla.models.feature import BenchmarkQuestion

# 1'234.50 / 1’234.50 / 1,234.50 / 1 234.50 / 1234.5 / -12.00
_NUMBER = re.compile(
    r"(?<![\w.])-?\d{1,3}(?:['’\u202f\u00a0 ,]\d{3})+(?:\.\d+)?|(?<![\w.])-?\d+(?:\.\d+)?"
)


def numbers_in(text: str) -> list[float]:
    """Every number in ``text``, Swiss and English thousands separators understood."""
    out = []
    for match in _NUMBER.findall(text or ""):
        cleaned = re.sub(r"['’\u202f\u00a0 ,]", "", match)
        try:
            out.append(float(cleaned))
        except ValueError:  # pragma: no cover - the regex only matches numbers
            continue
    return out


def numeric_ok(answer: str, expected: list[float], tolerance: float = 0.01) -> bool:
    """Every expected number appears in the answer (sign-insensitive, within ``tolerance``)."""
    found = [abs(n) for n in numbers_in(answer)]
    for e in expected:
        if not any(abs(f - abs(e)) <= tolerance + 1e-6 for f in found):
            return False
    return bool(expected) or bool(answer.strip())


def _filter_fields(arguments: dict[str, Any]) -> set[str]:
    filters = arguments.get("filters") or []
    return {f.get("field") for f in filters if isinstance(f, dict)}


def pattern_ok(question: BenchmarkQuestion, calls: list[RecordedCall]) -> bool:
    """The expected tools were used successfully, and every expected filter field appears in
    a successful call of one of them."""
    done = [c for c in calls if c.success]
    used = {c.tool for c in done}
    if not set(question.expected_tools) <= used:
        return False
    relevant = [c for c in done if not question.expected_tools or c.tool in question.expected_tools]
    fields = set().union(*(_filter_fields(c.arguments) for c in relevant)) if relevant else set()
    return set(question.expected_filters) <= fields


def matches_forbidden(call: RecordedCall, rule: dict[str, Any]) -> bool:
    """Whether an executed call is the forbidden pattern ``rule`` (keys: tool, table,
    function, field, missing_filter)."""
    args = call.arguments
    if "tool" in rule and call.tool != rule["tool"]:
        return False
    if "table" in rule and args.get("table") != rule["table"]:
        return False
    if (
        "function" in rule
        and str(args.get("function", "")).upper() != str(rule["function"]).upper()
    ):
        return False
    if "field" in rule and args.get("field") != rule["field"]:
        return False
    return not ("missing_filter" in rule and rule["missing_filter"] in _filter_fields(args))


def forbid_ok(question: BenchmarkQuestion, calls: list[RecordedCall]) -> bool:
    """No *executed* call matches a forbidden pattern (a validator rejection kept it from
    the database, so it does not count)."""
    return not any(
        matches_forbidden(c, rule) for c in calls if c.success for rule in question.forbidden
    )


@dataclass
class Score:
    """The four verdicts of one answer, with the numbers found."""

    pattern_ok: bool
    forbid_ok: bool
    numeric_ok: bool
    found_numbers: list[float] = field(default_factory=list)

    @property
    def accuracy_ok(self) -> bool:
        return self.pattern_ok and self.forbid_ok and self.numeric_ok


def score(question: BenchmarkQuestion, answer: str, calls: list[RecordedCall]) -> Score:
    """Score one run of ``question``."""
    return Score(
        pattern_ok=pattern_ok(question, calls),
        forbid_ok=forbid_ok(question, calls),
        numeric_ok=numeric_ok(answer, question.expected_numbers, question.tolerance),
        found_numbers=numbers_in(answer),
    )
