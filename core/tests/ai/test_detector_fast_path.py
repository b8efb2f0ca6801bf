"""The default neutralizer's cheap reads of a text (its fast path for ASCII without capitals,
and the pre-checks that read a pattern together with the check of its value) find exactly
what every detector run on the whole text finds. Privacy-critical: each shortcut is checked
against the full path on generated texts that hold personal data of every kind, in upper,
lower and mixed case, inside JSON and next to non-ASCII letters, and each necessary condition
it relies on is checked on its own."""

from __future__ import annotations

import ipaddress
import re
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nyla.ai import default_neutralizer as dn
from nyla.ai.default_neutralizer import DefaultNeutralizer
from nyla.ai.pii_birth import date_shaped
from nyla.ai.pii_clues import CluedScan
from nyla.ai.pii_context import CONTEXT_DETECTORS
from nyla.ai.pii_ids import id_findings
from nyla.ai.pii_shapes import DATE
from nyla.linear_regex import Scan

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def every_detector(text: str) -> list[tuple[str, int, int, str]]:
    """What every detector finds in ``text``, none skipped by a pre-check or a search."""
    scan = CluedScan(text)
    found = [f for _, _, find in dn._MATCH_DETECTORS for f in find(scan)]
    found += [f for _, find in CONTEXT_DETECTORS for f in find(scan)]
    ids = dn._id_tokens(scan)
    found = dn._outside_ids(found, ids) if ids else found
    return sorted((f.category, f.start, f.end, f.value) for f in found)


def found(text: str) -> list[tuple[str, int, int, str]]:
    return sorted((f.category, f.start, f.end, f.value) for f in DefaultNeutralizer().find(text))


def _iban(country: str, bban: str) -> str:
    digits = "".join(str(int(ch, 36)) for ch in bban + country + "00")
    return f"{country}{98 - int(digits) % 97:02d}{bban}"


def _luhn(body: str) -> str:
    return next(body + d for d in string.digits if dn.luhn_valid(body + d))


def _ahv(nine: str) -> str:
    digits = "756" + nine
    total = sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(digits))
    return f"{digits[:3]}.{digits[3:7]}.{digits[7:11]}.{digits[11:]}{(10 - total % 10) % 10}"


_digits = st.text(alphabet=string.digits, min_size=1, max_size=14)
#: personal data of every kind the detectors find, and near misses of each
_VALUES = st.one_of(
    st.emails(),
    st.builds(_iban, st.sampled_from(["CH", "DE", "GB", "FR"]), st.text("0123456789", min_size=12, max_size=20)),
    st.builds(_luhn, st.text(string.digits, min_size=12, max_size=18)),
    st.builds(_ahv, st.text(string.digits, min_size=9, max_size=9)),
    st.from_regex(r"(?:\+|00)[1-9][0-9]{1,2}[ ./-]?(?:\(0\) ?)?[0-9]{2,3}[ ./-]?[0-9]{3}[ ./-]?[0-9]{2,4}", fullmatch=True),
    st.from_regex(r"\(?0[1-9][0-9]\)?[ ./-]?[0-9]{3}[ ./-]?[0-9]{2}[ ./-]?[0-9]{2}", fullmatch=True),
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(str),
    st.from_regex(r"(?:[0-9a-f]{0,4}:){1,8}[0-9a-f]{0,4}", fullmatch=True),
    st.from_regex(DATE, fullmatch=True),
    st.from_regex(r"[0-9]{1,2}[./-][0-9]{1,2}[./-][0-9]{2,4}", fullmatch=True),
    st.from_regex(r"[A-Z]{0,2}[0-9]{5,12}[A-Z]?|[0-9]{1,8}", fullmatch=True),
    _digits,
    st.sampled_from(
        ["Herr Hans Müller", "Frau Dr. Anna Meier-Schnyder", "Dear Anna", "Mit freundlichen Grüssen\nPeter Keller",
         "Bahnhofstrasse 12, 8001 Zürich", "rue du Lac 3", "CH-3000 Bern", "X4518273", "C01X00T47", "12AB34567"]
    ),
)  # fmt: skip
#: labels and cues the context detectors read, and words that are none
_WORDS = st.sampled_from(
    ["geb.", "geboren", "Geburtsdatum:", "date of birth", "DOB", "born on", "née le", "nata il",
     "(*", "ist am", "passport no.", "Pass-Nr.", "ID card", "id-nr.", "numéro de passeport:",
     "carta d'identità", "Ausweis", "Dokumentnummer", "lautet", "Herr", "Frau", "Signora",
     "Mr.", "Adresse:", "read", "ok", "write", "round", "amount", "version", "v", "build",
     "file id:", "sha256", "call", "mail", "iban", "phone", "tel.", "é", "ß", "ſ", "\u212a",
     "Zürich", "Genève", "::", ":", "+", "00", "(", ")", "*", "@", "-", "/", ".", "\n", "\t"]
)  # fmt: skip


def _json(parts: list[str]) -> str:
    return "{" + ", ".join(f'"k{i}": "{p}"' for i, p in enumerate(parts)) + "}"


_TEXTS = st.lists(st.one_of(_VALUES, _WORDS, _VALUES), min_size=1, max_size=7).flatmap(
    lambda parts: st.sampled_from([" ".join(parts), "".join(parts), ": ".join(parts), _json(parts)])
)


def _cases(text: str) -> list[str]:
    return [text, text.lower(), text.upper(), text.casefold(), text.swapcase()]


@PROPERTY
@given(_TEXTS)
def test_the_fast_path_and_the_pre_checks_find_what_every_detector_finds(text: str) -> None:
    """In every case: the lower-cased copies take the fast path without a scan, the others
    the pre-checks; all must find exactly what the detectors find one by one."""
    for variant in _cases(text):
        assert found(variant) == every_detector(variant), variant


@pytest.mark.parametrize(
    "text",
    [
        "geb. 1.1.81", "geb. 1-3-81",
        "born 1-3-81",
        "call +41 4466 81",
        "tel +4 123 4567", "born 1/3/81", "dob 12.3.81", "born 3 may 1990", "born 1981-03-14", "(* 3.5.1990)", "geboren am 3. mai 1990",
        "passport no. 123456", "id-nr.: 12345678", "pass 123456789", "iban ch93 0076 2011 6238 5295 7",
        "call +41 44 668 18 00", "call 0041 44 668 18 00", "tel 044 668 18 00", "(044) 668 18 00",
        "card 4111 1111 1111 1111", "ahv 756.1234.5678.97", "host 10.0.0.1", "host fe80::1",
        "addr 1:2:3:4:5:6:7:8", "mail a@b.ch", '{"round": 3}', "read 5 ok", "read 100 ok",
        "read_a: read 100 ok\nread_b: read 101 ok\nwrite_d: write 34 ok", "12:30:45", "1.2.3",
        "ab12", "version 1.2.3.4", "0041", "+1", "::",
    ],
)  # fmt: skip
def test_lower_case_texts_near_each_limit(text: str) -> None:
    """Texts at the edge of each condition the fast path reads (four digits, six together,
    a date's year, "::", seven colons, 8 digits of a phone number, "0.0", "000")."""
    for variant in (text, text + " x", "x " + text, text.replace(" ", "\n")):
        assert found(variant) == every_detector(variant), variant


def test_the_fast_path_reads_no_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The round's tool results and arguments are decided without a scan (the point of the
    fast path); a text a detector may find something in still gets one."""

    def no_scan(*args: object) -> None:
        raise AssertionError("scanned")

    monkeypatch.setattr(dn, "CluedScan", no_scan)
    for text in (
        "read 5 ok",
        '{"round": 3}',
        "write 12 ok",
        "read_a: read 1 ok\nwrite_d: write 1 ok",
    ):
        assert DefaultNeutralizer().find(text) == []
    for text in (
        "mail a@b.ch",
        "Read 5 ok",
        "host fe80::1",
        "geb. 1.1.81",
        "geb. 1-3-81",
        "born 1/3/81",
        "dob 12.3.81",
        "born 3 may 1990",
        "pass 123456",
        "née",
    ):
        with pytest.raises(AssertionError, match="scanned"):
            DefaultNeutralizer().find(text)


# ---- each condition on its own -------------------------------------------------------------


@PROPERTY
@given(st.from_regex(DATE, fullmatch=True))
def test_every_date_is_date_shaped(date: str) -> None:
    for variant in _cases(date):
        assert date_shaped(variant, CluedScan(variant).shape), variant


@PROPERTY
@given(
    st.one_of(
        st.ip_addresses(v=6).map(str),
        st.from_regex(r"(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}", fullmatch=True),
    )
)
def test_a_valid_ipv6_value_holds_a_double_colon_or_seven_colons(value: str) -> None:
    if dn._ipv6_ok(value):
        assert "::" in value or value.count(":") == 7, value
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return
    assert "::" in value or value.count(":") == 7, value


_PHONE_ALPHABET = "0123456789 ./-()+\t:@x"


@PROPERTY
@given(st.text(alphabet=_PHONE_ALPHABET, max_size=40))
def test_number_patterns_match_only_where_their_pre_checks_hold(text: str) -> None:
    """Over texts of digits and separators (where the number patterns match most): each
    pattern-level check holds wherever its pattern matches, each value-level one wherever its
    detector finds something."""
    scan = CluedScan(text)
    checks = dn._pre_checks(text, scan.shape, scan.digits)
    for i, (pattern, _, find) in enumerate(dn._MATCH_DETECTORS):
        if pattern in (dn._PHONE_INTL, dn._IPV6):
            if next(iter(find(scan)), None) is not None:
                assert checks[i], (pattern.name, text)
        elif pattern.search_spans(scan.data, 0) is not None:
            assert checks[i], (pattern.name, text)
    assert found(text) == every_detector(text)


@PROPERTY
@given(
    st.sampled_from(["pass", "passport no.", "id-nr.", "ausweis", "id card:", "pass-nr."]),
    st.text(alphabet=" :#-.nr", max_size=4),
    st.from_regex(r"[A-Za-z]{0,5}[0-9][A-Za-z0-9]{2,11}", fullmatch=True),
)
def test_an_id_number_kept_is_six_capitals_or_digits(label: str, gap: str, value: str) -> None:
    """What the fast path reads of ID numbers: a number kept is 6 or more characters of
    ``A``-``Z`` and ``0``-``9``, so in a text without capitals six digits together."""
    for text in (f"{label}{gap} {value}", f"{label}{gap} {value}".lower()):
        kept = list(id_findings(Scan(text)))
        for f in kept:
            assert len(f.value) >= 6 and re.fullmatch(r"[A-Z0-9]+", f.value), f
        if kept and not re.search("[A-Z]", text):
            assert "000000" in CluedScan(text).shape, text


def test_a_clued_scan_holds_what_a_scan_holds() -> None:
    """The clued scan sets the scan's fields itself; given its data and shape it is the same."""
    for text in ("read 5 ok", "Zürich 8001", "a\ud800b", "ß\u212a", "", "X" * 300):
        scan, clued = Scan(text), CluedScan(text)
        assert (clued.text, clued.data, clued.ascii) == (scan.text, scan.data, scan.ascii)
        assert len(clued.shape) == len(clued.data)  # one character a byte
        if clued.ascii:
            again = CluedScan(text, clued.data, clued.shape)
            assert vars(again) == vars(clued)
