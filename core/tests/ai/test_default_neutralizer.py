"""The kernel's default neutralizer: contract, formats, checksums, and hypothesis properties
(no e-mail / IBAN / card / AHV survives, placeholders are stable, clean text is unchanged)."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nyla.ai import default_neutralizer
from nyla.ai.default_neutralizer import DefaultNeutralizer, ahv_valid, iban_valid, luhn_valid
from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession
from nyla.testing.neutralizer_contract import NeutralizerContract

SAMPLES = (
    "Mail anna.muster@example.ch or call +41 44 668 18 00.",
    "Mobile 079 123 45 67, office 0041 44 668 18 00, Berlin +49 (0)30 1234567.",
    "Pay to CH93 0076 2011 6238 5295 7 or DE89370400440532013000 today.",
    "Card 4111 1111 1111 1111, AHV 756.1234.5678.97.",
    "Server 192.168.1.20 and 2001:db8::8a2e:370:7334.",
)
CLEAN = (
    "The quarterly report is due on Friday.",
    "Meeting on 2024-01-15 at 12:30, costs 1200.50 CHF, version 1.2.3, invoice 17/2024.",
    "Order 12345678 shipped; ZIP 8001 Zürich; call extension 42.",
)


class TestDefaultNeutralizerContract(NeutralizerContract):
    positive_samples = SAMPLES
    negative_samples = CLEAN

    @pytest.fixture
    def plugin(self) -> Any:
        return default_neutralizer


def categories(text: str) -> list[tuple[str, str]]:
    return [(f.category, f.value) for f in DefaultNeutralizer().find(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x anna.muster@example.ch y", ("EMAIL", "anna.muster@example.ch")),
        ("x +41 44 668 18 00 y", ("PHONE", "+41 44 668 18 00")),
        ("x +41446681800 y", ("PHONE", "+41446681800")),
        ("x 079 123 45 67 y", ("PHONE", "079 123 45 67")),
        ("x 044/668.18.00 y", ("PHONE", "044/668.18.00")),
        ("x CH93 0076 2011 6238 5295 7 AND y", ("IBAN", "CH93 0076 2011 6238 5295 7")),
        ("x 5555-5555-5555-4444 y", ("CARD", "5555-5555-5555-4444")),
        ("x 7561234567897 y", ("AHV", "7561234567897")),
        ("x 10.0.0.1. y", ("IP", "10.0.0.1")),
        ("x fe80::1 y", ("IP", "fe80::1")),
    ],
)
def test_formats(text: str, expected: tuple[str, str]) -> None:
    assert expected in categories(text)


@pytest.mark.parametrize(
    "text",
    [
        "CH93 0076 2011 6238 5295 8",  # wrong IBAN checksum
        "4111 1111 1111 1112",  # fails Luhn
        "756.1234.5678.98",  # wrong AHV check digit
        "12:30:45",
        "256.1.1.1",
    ],
)
def test_invalid_checksums_and_lookalikes_are_left_alone(text: str) -> None:
    assert categories(text) == []


def test_checksum_helpers() -> None:
    assert iban_valid("GB82 WEST 1234 5698 7654 32") and not iban_valid(
        "GB82 WEST 1234 5698 7654 33"
    )
    assert luhn_valid("378282246310005") and not luhn_valid("378282246310006")
    assert ahv_valid("756.9217.0769.85") and not ahv_valid("756.9217.0769.86")


# ---- generators of valid personal data --------------------------------------------------


def make_iban(country: str, bban: str) -> str:
    rearranged = bban + country + "00"
    digits = "".join(str(int(ch, 36)) for ch in rearranged)
    check = 98 - int(digits) % 97
    return f"{country}{check:02d}{bban}"


def make_luhn(prefix: str, length: int) -> str:
    body = prefix
    rng = random.Random(prefix + str(length))
    while len(body) < length - 1:
        body += str(rng.randrange(10))
    for last in "0123456789":
        if luhn_valid(body + last):
            return body + last
    raise AssertionError("unreachable")


def make_ahv(nine: str) -> str:
    digits = "756" + nine
    total = sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(digits))
    return f"{digits}{(10 - total % 10) % 10}"


ibans = st.builds(
    make_iban,
    st.sampled_from(["CH", "DE", "FR", "AT", "LI", "IT", "GB", "NL"]),
    st.text(alphabet=string.digits + string.ascii_uppercase, min_size=12, max_size=26),
).map(lambda iban: iban if iban_valid(iban) else make_iban("CH", "00762011623852957"))
cards = st.builds(make_luhn, st.sampled_from(["4", "51", "55", "37", "6011"]), st.integers(13, 19))
ahvs = st.builds(make_ahv, st.text(alphabet=string.digits, min_size=9, max_size=9))
emails = st.emails()
prose = st.text(alphabet=string.ascii_letters + " ,;!?()'\"äöüÄÖÜéè", max_size=120)

PROPERTY = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def neutralize(text: str, session: NeutralizationSession | None = None) -> str:
    gate = NeutralizationGate([DefaultNeutralizer()], require=True)
    return gate.apply(text, session or NeutralizationSession())


@PROPERTY
@given(value=st.one_of(emails, ibans, cards, ahvs), before=prose, after=prose)
def test_no_personal_value_survives(value: str, before: str, after: str) -> None:
    text = f"{before} {value} {after}"
    out = neutralize(text)
    assert value not in out


@PROPERTY
@given(values=st.lists(st.one_of(emails, ibans, cards, ahvs), min_size=1, max_size=4))
def test_placeholders_are_stable_and_restorable(values: list[str]) -> None:
    session = NeutralizationSession()
    text = " and ".join(values)
    first = neutralize(text, session)
    second = neutralize(" / ".join(reversed(values)), session)
    for value in values:
        placeholder = session.placeholder_for("X", value)  # existing value: same placeholder
        assert placeholder in first and placeholder in second
    assert session.restore(first) == text


@PROPERTY
@given(text=prose)
def test_text_without_personal_data_is_unchanged(text: str) -> None:
    assert neutralize(text) == text


def swiss_phone(area: int, a: int, b: int, c: int, style: int) -> str:
    digits = f"{area:02d}{a:03d}{b:02d}{c:02d}"
    grouped = f"{digits[:2]} {digits[2:5]} {digits[5:7]} {digits[7:]}"
    return [
        f"+41 {grouped}",
        f"0041 {grouped}",
        f"0{grouped}",
        f"+41{digits}",
        f"0{digits[:2]}/{digits[2:5]}.{digits[5:7]}.{digits[7:]}",
    ][style]


phones = st.builds(
    swiss_phone,
    st.integers(21, 99),
    st.integers(0, 999),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 4),
)
ipv4s = st.ip_addresses(v=4).map(str)


def _no_version_word(text: str) -> bool:
    """A dotted quad right after a version word ("v", "build", ...) is read as a version
    number by design, so the prose before the value must not end in one."""
    return default_neutralizer._VERSION_WORDS.search((text + " ")[-20:]) is None


@PROPERTY
@given(value=st.one_of(phones, ipv4s), before=prose.filter(_no_version_word), after=prose)
def test_no_swiss_phone_or_ipv4_survives(value: str, before: str, after: str) -> None:
    out = neutralize(f"{before} {value} {after}")
    assert value not in out


def test_ids_and_hashes_are_not_card_or_ahv_numbers() -> None:
    """The digits inside a UUID or a hex hash can pass the Luhn check (this UUID's
    ``5-4019-9238-84956`` does); they are part of a longer token, not a card number, and
    replacing them breaks the id the model has to send back."""
    assert luhn_valid("54019923884956")
    for text in (
        "file id: ec944983-bdb5-4019-9238-84956e12b784",
        "sha256 a756123456789012b9f0",
        "ref:docItem:0f4111111111111111ab",
    ):
        assert DefaultNeutralizer().find(text) == [], text
    # the same numbers standing alone are still found
    found = DefaultNeutralizer().find("Karte 4111 1111 1111 1111, AHV-Nr.756.1234.5678.97")
    assert [f.category for f in found] == ["CARD", "AHV"]


def test_random_uuids_are_never_neutralized() -> None:
    import uuid

    rng = random.Random(5)
    neutralizer = DefaultNeutralizer()
    for _ in range(5000):
        text = f"file id: {uuid.UUID(int=rng.getrandbits(128), version=4)}"
        assert neutralizer.find(text) == [], text


def _every_detector(text: str) -> list[tuple[str, int, int]]:
    """What every detector finds, without the pre-checks and the search that skip them."""
    from nyla.ai.pii_clues import CluedScan
    from nyla.ai.pii_context import CONTEXT_DETECTORS

    scan = CluedScan(text)
    found = [f for _, _, find in default_neutralizer._MATCH_DETECTORS for f in find(scan)]
    found += [f for _, find in CONTEXT_DETECTORS for f in find(scan)]
    ids = default_neutralizer._id_tokens(scan)
    found = default_neutralizer._outside_ids(found, ids) if ids else found
    return sorted((f.category, f.start, f.end) for f in found)


@PROPERTY
@given(
    value=st.one_of(emails, ibans, cards, ahvs, phones, ipv4s, st.sampled_from(SAMPLES + CLEAN)),
    before=prose,
    after=prose,
)
def test_the_search_for_any_match_never_hides_a_finding(
    value: str, before: str, after: str
) -> None:
    text = f"{before} {value} {after}"
    found = sorted((f.category, f.start, f.end) for f in DefaultNeutralizer().find(text))
    assert found == _every_detector(text)


@pytest.mark.parametrize("text", [*SAMPLES, *CLEAN, '{"round": 17}', "read ok", "Herr Anna Muster"])
def test_the_search_for_any_match_skips_only_where_no_pattern_matches(text: str) -> None:
    from nyla.ai.pii_clues import CluedScan

    scan = CluedScan(text)
    any_match = default_neutralizer._ANY_MATCH.search_spans(scan.data, 0) is not None
    matched = [
        (pattern, may, find)
        for pattern, may, find in default_neutralizer._MATCH_DETECTORS
        if pattern.search_spans(scan.data, 0) is not None
    ]
    assert any_match == bool(matched)
    # no pre-check skips a pattern that matches, or, where the pre-check reads the value's
    # check too (phone numbers, IPv6 addresses), a detector that finds something
    value_checked = {default_neutralizer._PHONE_INTL, default_neutralizer._IPV6}
    for pattern, may, find in matched:
        if pattern not in value_checked or next(iter(find(scan)), None) is not None:
            assert may(scan), pattern.name
    assert sorted((f.category, f.start, f.end) for f in DefaultNeutralizer().find(text)) == (
        _every_detector(text)
    )
