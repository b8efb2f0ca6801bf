"""The default neutralizer's pure-Python pre-checks (``nyla.ai.pii_clues``) never skip a text a
detector would find something in. Privacy-critical, so the argument is checked in its parts:
RE2's case folding and capital letters against Python's over all of Unicode, every label each
pattern accepts against the stems, and the gated neutralizer against every detector run on
the labelled sets in case variants a reader might type."""

from __future__ import annotations

import re
import re._parser as sre_parse  # type: ignore[import-not-found]
import string
from itertools import product
from pathlib import Path
from typing import Any

import pytest
import re2  # type: ignore[import-untyped]
from hypothesis import given
from hypothesis import strategies as st

from nyla.ai import default_neutralizer, pii_address, pii_birth, pii_ids
from nyla.ai.default_neutralizer import DefaultNeutralizer
from nyla.ai.neutralizer_eval import read_set
from nyla.ai.pii_clues import CluedScan, stems_pattern
from nyla.ai.pii_context import CONTEXT_DETECTORS, context_findings
from nyla.ai.pii_shapes import DATE
from nyla.linear_regex import Scan

DATA = Path(__file__).resolve().parents[3] / "tests" / "data"

#: every label alternative the stems stand for, with the detector's stems
LABELS = {
    "birth": ((pii_birth._LABELS, pii_birth._LABELS_AFTER), pii_birth.LABEL_STEMS),
    "id": ((pii_ids._LABELS,), pii_ids.LABEL_STEMS),
    "address": ((pii_address._FRENCH_STREETS,), pii_address.FRENCH_STEMS),
}


def _all_code_points() -> str:
    return "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)


def _spell(tree: sre_parse.SubPattern) -> set[str]:
    """Every string a finite regex (literals, classes, branches, groups, ``?``) matches."""
    out = {""}
    for op, arg in tree:
        name = str(op)
        if name == "LITERAL":
            options = {chr(arg)}
        elif name == "IN":
            options = set()
            for kind, value in arg:
                assert str(kind) == "LITERAL", f"class of {kind} in a label"
                options.add(chr(value))
        elif name == "BRANCH":
            options = set().union(*(_spell(branch) for branch in arg[1]))
        elif name == "SUBPATTERN":
            options = _spell(arg[-1])
        elif name == "MAX_REPEAT":
            low, high, item = arg
            assert high <= 1, "only ? in a label"
            options = _spell(item) | ({""} if low == 0 else set())
        else:
            raise AssertionError(f"{name} in a label: teach _spell about it")
        out = {a + b for a, b in product(out, options)}
    return out


def spell(source: str) -> set[str]:
    """Every label ``source`` (RE2 syntax, Python-compatible for these) accepts."""
    return _spell(sre_parse.parse(source))


@pytest.mark.parametrize("detector", sorted(LABELS))
def test_every_label_holds_a_stem(detector: str) -> None:
    sources, stems = LABELS[detector]
    labels = set().union(*(spell(s) for s in sources))
    assert len(labels) >= 12
    assert all(stem == stem.casefold() for stem in stems)
    for label in labels:
        assert any(stem in label.casefold() for stem in stems), label
    # no stem is dead weight: each is the only one in some label (a stem for a label the
    # pattern lost would hide that the list is no longer read off the pattern)
    for stem in stems:
        assert any([s for s in stems if s in label.casefold()] == [stem] for label in labels), stem


#: every stem tuple the detectors look up, and characters around them
_STEM_TUPLES = [stems for _, stems in LABELS.values()]
_STEM_PIECES = sorted(
    {s for stems in _STEM_TUPLES for s in stems}
    | {re.sub(r"[ .-]", "x", s) for stems in _STEM_TUPLES for s in stems}  # "d.o.b" -> "dxoxb"
    | {"x", " ", ".", "-", "0", "é"}
)


@given(st.lists(st.sampled_from(_STEM_PIECES), max_size=6), st.sampled_from(range(len(LABELS))))
def test_a_stems_pattern_finds_exactly_where_a_stem_is_a_substring(
    pieces: list[str], which: int
) -> None:
    """The detectors look their stems up in one regex search: it answers as the substring
    tests would, the stems' ``.``, ``-`` and spaces taken literally."""
    stems = _STEM_TUPLES[which]
    for text in ("".join(pieces), "x".join(pieces), "".join(p[1:] for p in pieces)):
        expected = any(stem in text.casefold() for stem in stems)
        assert CluedScan(text).mentions(stems_pattern(stems)) is expected, (text, stems)


def min_digits(source: str) -> int:
    """The fewest ASCII digits any match of the pattern ``source`` holds, read off its parse
    (Python's parser: a piece without RE2-only syntax such as ``\\pL``). A lower bound: only a
    digit literal or a class of digits alone counts, whatever else counts 0."""
    return _min_digits(sre_parse.parse(source))


def _min_digits(items: Any) -> int:
    total = 0
    for op, arg in items:
        kind = str(op)
        if kind == "LITERAL":
            total += 48 <= arg <= 57
        elif kind == "IN":
            total += all(
                (str(k) == "LITERAL" and 48 <= v <= 57)
                or (str(k) == "RANGE" and v[0] >= 48 and v[1] <= 57)
                for k, v in arg
            )
        elif kind in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            total += arg[0] * _min_digits(arg[2])
        elif kind == "BRANCH":
            total += min(_min_digits(branch) for branch in arg[1])
        elif kind == "SUBPATTERN":
            total += _min_digits(arg[-1])
    return total


def test_min_digits_reads_the_fewest_digits_a_match_holds() -> None:
    assert min_digits("[0-9]{2}|a[0-3]") == 1
    assert min_digits("(?:x|[0-9])") == 0
    assert min_digits("[^0-9]") == 0  # a negated class is no digit
    assert min_digits("[0-9a]") == 0  # nor is a class that also takes a letter
    assert min_digits("1?2") == 1
    assert min_digits("(?:12){2,3}") == 4


def test_a_date_holds_four_digits_and_every_birth_pattern_a_date() -> None:
    """The dates of birth pre-check asks for :data:`DATE_DIGITS` digits: the fewest a date
    holds, which each pattern's own text must then hold too (and RE2 agrees on the shortest)."""
    assert pii_birth.DATE_DIGITS == min_digits(DATE) == 4
    for pattern in (pii_birth._BIRTH_DATE, pii_birth._STARRED_DATE, pii_birth._DATE_BEFORE_LABEL):
        assert f"(?P<v>{DATE})" in pattern.source
    assert re2.fullmatch(DATE, "1.1.81") is not None
    assert re2.fullmatch(DATE, "1.1.8") is None
    assert found("geb. 1.1.81") == [("DOB", 5, 11)]


def test_spell_reads_the_labels_as_re2_matches_them() -> None:
    """The enumeration agrees with RE2: each spelt label is matched whole, in a text."""
    labels = spell(pii_birth._LABELS)
    assert {"Geb.-Datum", "D.O.B.", "nata", "Nato", "birthdate", "birth date", "née"} <= labels
    assert {"numéro de passeport", "id-no.", "ID-Karte", "Passes"} <= spell(pii_ids._LABELS)
    options = re2.Options()
    options.case_sensitive = False
    for source in (pii_birth._LABELS, pii_ids._LABELS, pii_address._FRENCH_STREETS):
        regex = re2.compile(f"(?:{source})", options)
        for label in spell(source):
            assert regex.fullmatch(label), label


def test_re2_case_folding_is_python_casefold_on_every_label_letter() -> None:
    """Each code point RE2 matches case-insensitively for a letter of a label case-folds to
    the letter's own case-fold (so a matched label, case-folded, holds the stem)."""
    letters = set()
    for sources, stems in LABELS.values():
        for source in sources:
            letters.update("".join(spell(source)))
        letters.update("".join(stems))
    options = re2.Options()
    options.case_sensitive = False
    everything = _all_code_points()
    for letter in sorted(letters):
        twins = re2.compile(re2.escape(letter), options).findall(everything)
        assert letter in twins
        assert {t.casefold() for t in twins} == {letter.casefold()}, (letter, twins)


def test_every_re2_capital_is_a_python_capital() -> None:
    options = re2.Options()
    options.max_mem = 64 << 20
    capitals = re2.compile(r"\p{Lu}", options).findall(_all_code_points())
    assert len(capitals) > 1000
    assert {c for c in capitals if c.isascii()} == set(string.ascii_uppercase)
    for capital in capitals:  # alone, among lower-case ASCII, among other lower-case letters
        for text in (capital, f"read {capital} ok", f"é {capital}ß"):
            assert CluedScan(text).may_have_upper, hex(ord(capital))
    assert not CluedScan('{"round": 3}').may_have_upper
    assert not CluedScan("rue du lac, née à genève").may_have_upper


def _variants(text: str) -> list[str]:
    """``text`` as typed in other cases, and with the letters RE2 folds onto ASCII ones."""
    return [
        text,
        text.upper(),
        text.lower(),
        text.title(),
        text.swapcase(),
        text.replace("s", "\u017f").replace("k", "\u212a").replace("K", "\u212a"),
    ]


def every_detector(text: str) -> list[tuple[str, int, int]]:
    """What every detector finds, with none of the pre-checks or the search for any match."""
    scan = CluedScan(text)
    found = []
    for _, _, find in default_neutralizer._MATCH_DETECTORS[:-1]:
        found.extend(find(scan))
    for _, find in CONTEXT_DETECTORS:
        found.extend(find(scan))
    found.extend(default_neutralizer._MATCH_DETECTORS[-1][2](scan))
    ids = default_neutralizer._id_tokens(scan)
    found = default_neutralizer._outside_ids(found, ids) if ids else found
    return sorted((f.category, f.start, f.end) for f in found)


def found(text: str) -> list[tuple[str, int, int]]:
    return sorted((f.category, f.start, f.end) for f in DefaultNeutralizer().find(text))


@pytest.mark.parametrize("name", ["neutralizer_labelled.tsv", "pii_in_context.tsv"])
def test_the_pre_checks_skip_no_finding_in_the_labelled_sets(name: str) -> None:
    texts = [row[3] for row in read_set(DATA / name)]
    for text in texts:
        for variant in _variants(text):
            assert found(variant) == every_detector(variant), variant


#: the match detectors whose pre-check also reads what their check of a value accepts (a
#: phone number's 8 digits, an IPv6 address's "::" or seven colons): a match the check turns
#: down may fail the pre-check, a finding may not
VALUE_CHECKED = {default_neutralizer._PHONE_INTL.name, default_neutralizer._IPV6.name}


def test_each_pre_check_holds_wherever_its_patterns_match() -> None:
    """Pattern by pattern (a check that fails here skips a real match, even where another
    detector's finding would hide it in the comparison above), or finding by finding for the
    pre-checks that read the value's check too."""
    texts = [row[3] for name in DATA.glob("*.tsv") if "pii" in name.name or "neutral" in name.name
             for row in read_set(name)]  # fmt: skip
    hits = 0
    for text in texts:
        for variant in _variants(text):
            scan = CluedScan(variant)
            for pattern, may, find in default_neutralizer._MATCH_DETECTORS:
                if next(iter(find(scan)), None) is not None or (
                    pattern.name not in VALUE_CHECKED and pattern.search_spans(scan.data, 0)
                ):
                    hits += 1
                    assert may(scan), (pattern.name, variant)
            for may, find in CONTEXT_DETECTORS:
                if next(iter(find(scan)), None) is not None:
                    hits += 1
                    assert may(scan), (find.__name__, variant)
    assert hits > 1000


#: pieces that make texts the patterns match: labels of each detector, dates, numbers,
#: names, separators, and letters RE2 folds
_PIECES = sorted(
    set().union(*(spell(s) for sources, _ in LABELS.values() for s in sources))
    | {"14.03.1981", "3. Mai 1990", "(*", "*", "4111 1111 1111 1111", "756.1234.5678.97",
       "+41 44 668 18 00", "044 668 18 00", "192.168.1.20", "2001:db8::1", "a@b.ch",
       "CH93 0076 2011 6238 5295 7", "X4518273", "Anna Meier", "Herr", "Frau", "Dear",
       "Bahnhofstrasse 12", "8001 Zürich", "du Lac", "Lac", ": ", ", ", " ", "\n", "\u017f",
       "\u212a", "É", "é", "geb.", "ist am", "geboren", "Nr.", "12", "0", "lautet"}
)  # fmt: skip


@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8))
def test_the_pre_checks_skip_no_finding_in_composed_texts(pieces: list[str]) -> None:
    text = " ".join(pieces)
    for variant in _variants(text):
        assert found(variant) == every_detector(variant), variant


def test_the_name_cues_hold_every_spelled_alternative_after_a_boundary() -> None:
    """Every role, label, title and greeting the name patterns accept (spelled out, in case
    variants) is seen by the names pre-check after any boundary character; the closing
    formulas and birth cues (with repetitions the speller does not enumerate) are covered by
    the labelled and composed texts above."""
    from nyla.ai import pii_names
    from nyla.ai.pii_shapes import TITLE

    sources = (pii_names._ROLES_DE, pii_names._ROLES_EN, pii_names._ROLES_FR_IT,
               pii_names._BY, TITLE, pii_names._GREETINGS)  # fmt: skip
    seen = 0
    for source in sources:
        for label in spell(source):
            for variant in {label, label.upper(), label.lower(), label.title()}:
                for before in ("", " ", "(", "\n", "\u0345", ":"):
                    assert pii_names.may_hold_name(CluedScan(f"{before}{variant} X")), (
                        before,
                        variant,
                    )
                    seen += 1
    assert seen > 5000
    assert all(p for s in pii_names._CUE_SOURCES for p in pii_names.literal_prefixes(s))


@pytest.mark.parametrize(
    "text",
    [
        'result: {"toolName": "read_a", "success": true, "content": "read 1 ok"}',
        '{"fileId": "a1", "folderName": "Reports", "sizeBytes": 12}',
        "Check the three sources, then record what they say.",
    ],
)
def test_capitals_without_a_cue_do_not_run_the_name_patterns(text: str) -> None:
    from nyla.ai import pii_names

    assert not pii_names.may_hold_name(CluedScan(text))
    assert list(pii_names.name_findings(CluedScan(text))) == []


def test_the_context_detectors_read_a_text_a_scan_or_a_clued_scan_alike() -> None:
    """``context_findings`` takes what the detectors are given: a text, a plain scan (whose
    clues it reads itself) or the clued scan the default neutralizer made already."""
    text = "Sehr geehrter Herr Hans Müller, geb. 14.03.1981, Bahnhofstrasse 12, 8001 Zürich"
    expected = [(f.category, f.start, f.end) for f in context_findings(CluedScan(text))]
    assert {category for category, _, _ in expected} >= {"NAME", "DOB", "ADDRESS"}
    for given_as in (text, Scan(text)):
        assert [(f.category, f.start, f.end) for f in context_findings(given_as)] == expected


@pytest.mark.parametrize(
    "text",
    [
        "geb. 01.02.1980, passport no. 123456789",
        "id card number: 12345678",
        "geboren am 14.03.1981 in bern",
        "read 5 ok",
        '{"round": 3}',
        "no digits and no capitals here",
    ],
)
def test_a_text_without_capitals_finds_what_every_detector_finds(text: str) -> None:
    """A text without a capital skips the name and address pre-checks (each needs one): the
    dates of birth and ID numbers in it are still found, in the detectors' order."""
    scan = CluedScan(text)
    assert not scan.may_have_upper
    expected = [f for may_hold, find in CONTEXT_DETECTORS if may_hold(scan) for f in find(scan)]
    assert context_findings(CluedScan(text)) == expected
    if "19" in text:
        assert expected  # (a date of birth or an ID number is there to find)
