"""Regular expressions that take linear time on any input, for every pattern that reads
untrusted text (the neutralizer's detectors, the extractors).

Python's ``re`` backtracks: a pattern that is harmless on ordinary text can take quadratic or
exponential time on a crafted one (issue 27: the address pattern took 20 s on 8,000 ``A``s, on
the event loop, and froze the server). Rewriting every pattern so that it *happens* to be
linear in ``re`` is an argument a later edit can silently break; RE2 (``google-re2``) runs
every pattern as an automaton and guarantees time linear in the text, whatever the pattern.
What RE2 lacks, lookaround and backreferences, the callers do in Python on the bounded span
of a match: a lookbehind becomes a consumed prefix (``(?:^|[^\\pL])(?P<v>...)``) whose value
group is reported, a lookahead a check of the character after the match.

One search is linear. A loop of searches (every match in a text) stays linear as long as the
automaton does not read far past the matches it reports: a preferred longer alternative that
scans ahead and fails would be read again after each short match. The patterns here avoid
that shape (what may run long is the match itself; what follows a match is bounded, as in
``{1,3}``), and structural repetition is bounded so the automata stay small. :data:`PATTERNS`
lists every pattern, and the test suite times each, and each detector as a whole, on
adversarial inputs of growing size (``core/tests/test_linear_patterns.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import re2  # type: ignore[import-untyped]

_OPTIONS: dict[bool, Any] = {}


def _options(ignore_case: bool) -> Any:
    options = _OPTIONS.get(ignore_case)
    if options is None:
        options = re2.Options()
        options.case_sensitive = not ignore_case
        options.max_mem = 64 << 20  # room for the automata of the Unicode classes
        _OPTIONS[ignore_case] = options
    return options


@dataclass(frozen=True)
class LinearPattern:
    """One RE2 pattern and its name (for the timing test and error messages)."""

    name: str
    source: str
    ignore_case: bool = False

    @cached_property
    def regex(self) -> Any:
        """The RE2 automaton, compiled on first use: importing a module of patterns costs
        nothing until it scans (plugin discovery imports the neutralizer, ``nyla --help``
        never runs it)."""
        return re2.compile(self.source, _options(self.ignore_case))

    @cached_property
    def _groups(self) -> dict[str, int]:
        # (RE2's ``groupindex`` builds a new dict on every read: ~10 µs, and the detectors
        # ask for their groups on every text they scan)
        return {name: int(number) for name, number in self.regex.groupindex.items()}

    def group(self, name: str) -> int:
        """The number of the named group ``name``."""
        return self._groups[name]

    @cached_property
    def search_spans(self) -> Callable[[bytes, int], list[tuple[int, int]] | None]:
        """``search_spans(data, pos)``: the byte spans of every group of the first match in
        ``data`` from ``pos`` (``(-1, -1)`` for a group that did not take part), ``None``
        without one. The automaton is asked directly where google-re2 allows it: its
        ``search`` wraps each call in a generator and a match object (about half of a
        short text's scan)."""
        regex = self.regex
        raw = getattr(getattr(regex, "_regexp", None), "Match", None)
        anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
        if raw is None or anchor is None:  # another google-re2: its public search
            groups = range(regex.groups + 1)

            def public(data: bytes, pos: int) -> list[tuple[int, int]] | None:
                match = regex.search(data, pos)
                return None if match is None else [match.span(i) for i in groups]

            return public

        def direct(data: bytes, pos: int) -> list[tuple[int, int]] | None:
            spans: list[tuple[int, int]] = raw(anchor, data, pos, len(data))
            return None if spans[0][0] < 0 else spans

        return direct


#: every pattern compiled through :func:`compile_linear`, by name
PATTERNS: dict[str, LinearPattern] = {}


def compile_linear(name: str, source: str, *, ignore_case: bool = False) -> LinearPattern:
    """Register ``source`` under ``name`` as an RE2 pattern, compiled on its first search (the
    same name twice is a programming error; the test suite compiles and times every one)."""
    if name in PATTERNS and PATTERNS[name].source != source:
        raise ValueError(f"linear pattern {name!r} is already registered")
    pattern = LinearPattern(name, source, ignore_case)
    PATTERNS[name] = pattern
    return pattern


class Scan:
    """One text prepared for any number of linear patterns: encoded to UTF-8 once (RE2 reads
    bytes), offsets translated back to characters in one forward pass per pattern."""

    def __init__(self, text: str) -> None:
        self.text = text
        # a lone surrogate cannot be encoded: "?" keeps one character per character
        self.data = text.encode("utf-8", "replace")
        self.ascii = len(self.data) == len(text)

    def spans(self, pattern: LinearPattern, group: int = 0) -> Iterator[tuple[int, int]]:
        """Character spans of ``group`` of every match, left to right. The next search starts
        where this group ended, so a character a match consumed after its group (a
        separator standing in for a lookahead) can begin the next match."""
        for match in self.matches(pattern, group):
            yield match[group]

    def matches(self, pattern: LinearPattern, group: int = 0) -> Iterator[list[tuple[int, int]]]:
        """Character spans of all groups of every match (``(-1, -1)`` for a group that did
        not take part); searching resumes where ``group`` ended."""
        data, search = self.data, pattern.search_spans
        to_char = _Offsets(data, self.ascii)
        pos, end = 0, len(data)
        while pos <= end:
            spans = search(data, pos)
            if spans is None:
                return
            stop = spans[group][1] if spans[group][1] >= 0 else spans[0][1]
            yield [to_char.pair(s) for s in spans]
            pos = stop if stop > pos else pos + 1


class _Offsets:
    """Byte offsets of one scan -> character offsets. Offsets come nearly in order (a match's
    groups lie inside it, the next match starts at most one match back), so each is counted
    from the previous one, forward or back, and a scan decodes its text about once."""

    def __init__(self, data: bytes, ascii_only: bool) -> None:
        self.data = data
        self.ascii = ascii_only
        self.byte = 0
        self.char = 0

    def of(self, offset: int) -> int:
        """The character offset of byte ``offset`` (which starts a character)."""
        if self.ascii or offset < 0:
            return offset
        if offset >= self.byte:
            self.char += len(self.data[self.byte : offset].decode("utf-8"))
        else:
            self.char -= len(self.data[offset : self.byte].decode("utf-8"))
        self.byte = offset
        return self.char

    def pair(self, span: tuple[int, int]) -> tuple[int, int]:
        """A byte span as a character span."""
        if self.ascii or span[0] < 0:
            return span
        return self.of(span[0]), self.of(span[1])


def find_spans(pattern: LinearPattern, text: str, group: int = 0) -> list[tuple[int, int]]:
    """Character spans of ``group`` of every match of ``pattern`` in ``text``."""
    return list(Scan(text).spans(pattern, group))
