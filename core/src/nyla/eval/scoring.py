"""Scoring one answer of the data agent: ``patternOk`` (right tools and filters),
``forbidOk`` (no anti-pattern executed), ``numericOk`` (the expected numbers are in the
answer, with their sign, within the question's tolerance) and ``accuracyOk`` (all three)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from nyla.features.data_agent import RecordedCall
from nyla.models.feature import BenchmarkQuestion

#: spans that look numeric but are not amounts: ISO dates and periods (2025-03-31, 2025-03),
#: Swiss dates (31.03.2025) and booking references (RE-2025-0042)
_NOT_AMOUNTS = re.compile(
    r"\b\d{4}-\d{2}(?:-\d{2})?\b|\b\d{1,2}\.\d{1,2}\.\d{4}\b|\b[A-Za-z]{1,5}-\d{2,4}-\d+\b"
)
_NUMBER = re.compile(
    r"""
    (?<![\w.,'’\-\u2212\u2013])    # not inside a word, a reference or another number
    (?P<sign>[-\u2212\u2013]\s?)?     # minus, Unicode minus or en dash as a sign
    (?P<body>
        \d{1,3}(?:['’]\d{3})+(?:[.,]\d+)?                 # 1'234.50  1’234,50
      | \d{1,3}(?:[ \u00a0\u202f]\d{3})+(?:[.,]\d+)?     # 1 234.50 (space, nbsp, thin space)
      | \d{1,3}(?:\.\d{3})+,\d+                            # 1.234,50 (German)
      | \d{1,3}(?:\.\d{3}){2,}                             # 1.234.567 (German, no decimals)
      | \d{1,3}(?:,\d{3})+(?:\.\d+)?                       # 1,234.50 (English)
      | \d+(?:[.,]\d+)?                                    # 1234.5  1234,5
    )
    (?P<dash>[.,][-\u2013\u2014])?     # CHF 1 234.– (no rappen)
    (?![\w'’])
    """,
    re.VERBOSE,
)


def _value(body: str) -> float:
    """The value of a matched number body (see :func:`numbers_in` for the rules)."""
    compact = re.sub(r"['’ \u00a0\u202f]", "", body)
    if "," in compact and "." in compact:  # the later separator is the decimal one
        decimal = "," if compact.rfind(",") > compact.rfind(".") else "."
        grouping = "." if decimal == "," else ","
        compact = compact.replace(grouping, "").replace(decimal, ".")
    elif compact.count(".") > 1:  # 1.234.567: German grouping
        compact = compact.replace(".", "")
    elif "," in compact:
        head, _, tail = compact.rpartition(",")
        # 1,234 and 1,234,567 group thousands (English); 1234,5 and 12,50 are decimals
        if len(tail) == 3 and re.fullmatch(r"\d{1,3}(?:,\d{3})*", head):
            compact = compact.replace(",", "")
        else:
            compact = compact.replace(",", ".")
    return float(compact)


def numbers_in(text: str) -> list[float]:
    """Every amount in ``text``, in order, with its sign.

    Rules (each has a unit test): thousands grouped by apostrophe (``1'234.50``, ``1’234``),
    space, no-break or thin space (``CHF 1 234.–``), comma (``1,234.50``) or dot
    (``1.234,50``, ``1.234.567``); a decimal comma is read as a decimal point (``12,50``);
    ``.–`` after a number means no rappen; a leading ``-``, ``−`` or ``–`` is a minus sign;
    ``1.234`` is one point two three four (a single dot group is a decimal). Dates
    (``2025-03-31``, ``2025-03``, ``31.03.2025``) and references (``RE-2025-0042``) are not
    amounts, nor is a number glued to a word (``Q1``, ``6570a``).
    """
    cleaned = _NOT_AMOUNTS.sub(lambda m: " " * len(m.group(0)), text or "")
    out = []
    for match in _NUMBER.finditer(cleaned):
        value = _value(match.group("body"))
        out.append(-value if match.group("sign") else value)
    return out


#: an answer listing more amounts than this (beyond those it repeats from the question) is a
#: list of candidates, not an answer: max(MIN_LIMIT, SPREAD x the expected count)
SHOTGUN_MIN_LIMIT = 6
SHOTGUN_SPREAD = 3


def numeric_ok(
    answer: str, expected: list[float], tolerance: float = 0.01, question: str = ""
) -> bool:
    """Whether ``answer`` states every expected number.

    Each expected number needs its own number in the answer (two equal expected values need
    two), with the same sign, at most ``tolerance`` away (the question's stated tolerance).
    Numbers the answer merely repeats from ``question`` (account numbers, a year) are not
    counted as its own; an answer with more numbers of its own than
    ``max(SHOTGUN_MIN_LIMIT, SHOTGUN_SPREAD * len(expected))`` fails (it lists candidates
    instead of answering). Without expected numbers any non-empty answer passes.
    """
    if not expected:
        return bool(answer.strip())
    echoed = list(numbers_in(question))
    own = []
    for n in numbers_in(answer):
        if n in echoed:
            echoed.remove(n)  # an echo counts once per mention in the question
        else:
            own.append(n)
    if len(own) > max(SHOTGUN_MIN_LIMIT, SHOTGUN_SPREAD * len(expected)):
        return False
    pool = list(numbers_in(answer))  # an expected number may equal an echoed one
    for e in expected:
        hit = next((f for f in pool if abs(f - e) <= tolerance + 1e-9), None)
        if hit is None:
            return False
        pool.remove(hit)
    return True


def _filter_fields(arguments: dict[str, Any]) -> set[Any]:
    """The fields a call filters on (whatever the model sent as ``field``)."""
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
        numeric_ok=numeric_ok(
            answer, question.expected_numbers, question.tolerance, question.question
        ),
        found_numbers=numbers_in(answer),
    )
