"""Every pattern that reads untrusted text runs in linear time (issue 27, fault 1).

The neutralizer's address pattern took quadratic time on a run of upper-case word characters
(8,000 characters: 10-20 s, on the event loop), and the markdown heading pattern cubic time on
a heading with a long run of spaces. Each pattern registered in :mod:`nyla.linear_regex`, each
Python ``re`` pattern of the extractors, the validator and the text helpers, and each
detector and extractor as a whole is timed here on adversarial inputs at two sizes 16 times
apart; linear work grows about 16 times, quadratic work 256 times. The test fails above 48
(three times the linear growth, room for a loaded machine), takes the fastest of repeated
runs, and never compares a time with a fixed number of seconds.
"""

from __future__ import annotations

import gc
import importlib
import re
import time
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nyla.ai.default_neutralizer import DefaultNeutralizer
from nyla.features.validator import closest
from nyla.knowledge.chunking import split_spans
from nyla.knowledge.extract import extract
from nyla.linear_regex import PATTERNS, LinearPattern, Scan

SMALL, LARGE = 2_000, 32_000
#: linear growth is LARGE / SMALL = 16; quadratic 256
MAX_GROWTH = 48
#: below this a measurement is noise: the small size counts as at least this long
FLOOR_S = 0.0003

#: repeated units that made backtracking patterns slow, and shapes near what the detectors
#: look for (titles, labels, dates, numbers), so that each pattern gets to its long paths
UNITS = [
    "A", "Aa1", "QUJDRGVmZ2g=", "DEADBEEF09", "1 ", "-", " ", "\n", "Äé", "Ab ", "a.", "a:",
    "0", "+41 ", "1.1.", "Herr ", "Frau Dr. ", "Name: ", "geb. ", "14.03.", "Pass ", "Strasse ",
    "rue ", "a@", "a@b.", "x@y.ch ", "CH93 ", "Freundliche Grüsse\n", "Anna Meier ", "# ",
    "| ", "\u00a0", "4111 1111 1111 1111 ", "Sachbearbeiterin ist ", "Date of birth ",
]  # fmt: skip

#: Python ``re`` patterns that are only ever given a bounded slice, never a whole text
BOUNDED_INPUT = {
    "nyla.ai.default_neutralizer._VERSION_WORDS",  # the 20 characters before an address
    "nyla.ai.pii_ids._ADJACENT",  # the at most 61 characters between a label and a number
    "nyla.ai.pii_ids._SHAPES",  # a token of at most 17 characters
}
#: modules whose Python ``re`` patterns read untrusted text
RE_MODULES = [
    "nyla.ai.default_neutralizer",
    "nyla.ai.pii_ids",
    "nyla.ai.neutralize",
    "nyla.knowledge.chunking",
    "nyla.knowledge.language",
    "nyla.knowledge.search_text",
    "nyla.knowledge.extract",
    "nyla.knowledge.extract_office",
    "nyla.features.validator",
    "nyla.features.patterns",
    "nyla.text",
]


def _text(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _fastest(fn: Callable[[str], object], text: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()  # CPU of this thread: other load on the machine does not count
        fn(text)
        best = min(best, time.thread_time() - start)
    return best


def _growth(fn: Callable[[str], object], unit: str, sizes: tuple[int, int]) -> float:
    """How many times longer ``fn`` takes on ``sizes[1]`` than on ``sizes[0]`` characters
    of ``unit``."""
    fn(_text(unit, sizes[0]))  # warm-up: RE2 builds its automata lazily
    gc.disable()
    try:
        small = max(_fastest(fn, _text(unit, sizes[0]), 3), FLOOR_S)
        large = _fastest(fn, _text(unit, sizes[1]), 2)
    finally:
        gc.enable()
    return large / small


def _assert_linear(
    name: str,
    fn: Callable[[str], object],
    units: list[str],
    sizes: tuple[int, int] = (SMALL, LARGE),
) -> None:
    limit = MAX_GROWTH * sizes[1] / sizes[0] / (LARGE / SMALL)
    slow = {}
    for unit in units:
        growth = _growth(fn, unit, sizes)
        if growth > limit:
            growth = min(growth, _growth(fn, unit, sizes))  # once more: a busy machine?
        if growth > limit:
            slow[unit] = round(growth)
    assert not slow, f"{name} grows faster than linear (x{sizes[1] // sizes[0]} input): {slow}"


def _scan_all(pattern: LinearPattern) -> Callable[[str], object]:
    return lambda text: list(Scan(text).matches(pattern))


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_each_linear_pattern_takes_linear_time(name: str) -> None:
    _assert_linear(name, _scan_all(PATTERNS[name]), UNITS)


def _python_patterns() -> dict[str, re.Pattern[str]]:
    found = {}
    for module_name in RE_MODULES:
        module = importlib.import_module(module_name)
        for attr, value in vars(module).items():
            name = f"{module_name}.{attr}"
            if isinstance(value, re.Pattern) and name not in BOUNDED_INPUT:
                found[name] = value
    return found


@pytest.mark.parametrize("name", sorted(_python_patterns()))
def test_each_python_pattern_on_whole_texts_takes_linear_time(name: str) -> None:
    pattern = _python_patterns()[name]

    def run(text: str) -> None:
        list(pattern.finditer(text))
        pattern.match(text)
        pattern.fullmatch(text)

    _assert_linear(name, run, UNITS)


def test_the_neutralizer_takes_linear_time() -> None:
    _assert_linear("DefaultNeutralizer.find", DefaultNeutralizer().find, UNITS)


def _extract(kind: str) -> Callable[[str], object]:
    return lambda text: extract(f"f.{kind}", text.encode("utf-8"))


@pytest.mark.parametrize("kind", ["md", "html", "txt", "csv"])
def test_extraction_takes_linear_time(kind: str) -> None:
    units = ["# a" + " " * 40 + "b\n", "<p>", "</", "<!--", "&#", "<a href='", '"', "|-", ",\n"]
    units += ["<a b='>", "<script>", "<![CDATA[", "<?", "<!DOCTYPE ", "&amp", "<td>", "<h1>"]
    _assert_linear(f"extract .{kind}", _extract(kind), [*units, "A", " ", "\u00a0", "# "])


def test_a_markdown_heading_with_a_long_run_of_spaces_takes_linear_time() -> None:
    """The earlier heading pattern took cubic time here (4,000 spaces: 106 s)."""

    def heading(text: str) -> object:
        return extract("f.md", f"# a{text}b\n".encode())

    _assert_linear("extract .md heading", heading, [" ", "\t", " #", "\u00a0"])


def test_chunking_and_the_validator_take_linear_time() -> None:
    # from 16,000 characters on: below, the growth of its lists steps with the CPU caches
    units = ["A", "a ", "1.", "\u4e00", " "]
    _assert_linear("split_spans", split_spans, units, sizes=(16_000, 128_000))
    fields = ["closing_balance", "opening_balance", "account_number", "booking_date"]
    _assert_linear("closest", lambda name: closest(name, fields), ["a", "closing_", "ab_"])


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.lists(
        st.sampled_from(["A", "a", "1", " ", ".", "-", ":", "@", "\n", "Ä", ",", "(", "/", "+"]),
        min_size=1,
        max_size=6,
    ).map("".join)
)
def test_the_neutralizer_on_generated_units_takes_linear_time(unit: str) -> None:
    _assert_linear("DefaultNeutralizer.find", DefaultNeutralizer().find, [unit])
