"""The kernel's default neutralizer (a built-in plugin): finds e-mail addresses, phone
numbers (international and Swiss formats), IBANs (checksum-verified), payment card numbers
(Luhn), Swiss AHV/AVS numbers (EAN-13 check digit) and IPv4/IPv6 addresses.

Checksums keep false positives down where a format alone would match ordinary numbers;
phone numbers need a ``+`` / ``00`` country prefix or the Swiss ``0xx xxx xx xx`` shape so that
dates and amounts are left alone.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Callable, Iterator

from nyla.ai.pii_birth import DATE_DIGITS, date_shaped
from nyla.ai.pii_clues import SHAPE, CluedScan
from nyla.ai.pii_context import context_findings
from nyla.hookspecs import hookimpl
from nyla.linear_regex import LinearPattern, Scan, compile_linear
from nyla.models.neutralize import Finding

#: word characters as Python's ``\w`` has them (RE2's ``\w`` is ASCII only)
W = r"\pL\pN_"
_EMAIL_CHAR = W + r"!#$%&'*+/=?^\x60{|}~\-"
# local part and domain labels in any script (internationalised addresses: jürg@bäckerei.ch);
# the first group stands in for a lookbehind, the last for a lookahead (RE2 has neither)
_EMAIL = compile_linear(
    "neutralizer.email",
    rf"(?:^|[^{_EMAIL_CHAR}.])"
    rf"(?P<v>[{_EMAIL_CHAR}]+(?:\.[{_EMAIL_CHAR}]+)*"
    r"@(?:[\pL\pN](?:[\pL\pN_-]*[\pL\pN])?\.)+\pL(?:[\pL\pN_-]*[\pL\pN])?)"
    r"(?:$|[^\pL\pN_-])",
)
_SEP = r"[ \t./-]?"
_PHONE_INTL = compile_linear(
    "neutralizer.phone_intl",
    rf"(?:^|[^{W}+])(?P<v>(?:\+|00)[1-9][0-9]{{0,2}}{_SEP}(?:\(0\){_SEP})?"
    rf"(?:\(?[0-9]{{1,4}}\)?{_SEP}){{1,5}}[0-9]{{2,4}})(?:$|[^{W}])",
)
_PHONE_CH = compile_linear(
    "neutralizer.phone_ch",
    rf"(?:^|[^{W}+.(])(?P<v>(?:0[1-9][0-9]|\(0[1-9][0-9]\)){_SEP}[0-9]{{3}}{_SEP}[0-9]{{2}}"
    rf"{_SEP}[0-9]{{2}})(?:$|[^{W}])",
)
# where an IBAN may begin: two letters and two digits, in one case (the rest is read in
# Python, see _iban_at)
_IBAN_START = compile_linear(
    "neutralizer.iban_start",
    r"(?:^|[^A-Za-z0-9])(?P<v>[A-Z]{2}[0-9]{2}|[a-z]{2}[0-9]{2})",
)
# a dotted quad right after one of these words is a version number, not an address (Python's
# re on the 20 characters before a match: bounded input)
_VERSION_WORDS = re.compile(
    r"(?:\b(?:release|version|ver|v|build|rev|revision|firmware|patch|update|stand|mise à jour)"
    r"\.?\s*:?\s*"
    r"|\bv)$",
    re.IGNORECASE,
)
# not inside a longer token: the digits of a UUID or a hash are not a card or AHV number
_CARD = compile_linear(
    "neutralizer.card",
    rf"(?:^|[^{W}-])(?P<v>[0-9](?:[ -]?[0-9]){{12,18}})(?:$|[^{W}])",
)
_AHV = compile_linear(
    "neutralizer.ahv",
    rf"(?:^|[^{W}])(?P<v>756[. ]?[0-9]{{4}}[. ]?[0-9]{{4}}[. ]?[0-9]{{2}})(?:$|[^{W}])",
)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = compile_linear(
    "neutralizer.ipv4",
    rf"(?:^|[^0-9.])(?P<v>(?:{_OCTET}\.){{3}}{_OCTET})(?:$|[^0-9.]|\.(?:$|[^0-9]))",
)
# a UUID or a hex hash/id (letters and digits, 16+ characters): digits inside one are part of
# an identifier the model has to send back unchanged, never personal data
_ID_TOKEN = compile_linear(
    "neutralizer.id_token",
    rf"(?:^|[^{W}-])(?P<v>[0-9A-Fa-f]{{8}}-[0-9A-Fa-f]{{4}}-[0-9A-Fa-f]{{4}}-[0-9A-Fa-f]{{4}}"
    rf"-[0-9A-Fa-f]{{12}}|[0-9A-Fa-f]{{16,}})(?:$|[^{W}-])",
)
_IPV6 = compile_linear(
    "neutralizer.ipv6",
    rf"(?:^|[^{W}:])(?P<v>(?:[0-9A-Fa-f]{{0,4}}:){{2,7}}[0-9A-Fa-f]{{0,4}})(?:$|[^{W}:])",
)


def iban_valid(candidate: str) -> bool:
    """ISO 13616 check: move the first four characters to the end, letters to numbers,
    the remainder mod 97 must be 1."""
    compact = candidate.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34 or not compact[:2].isalpha() or not compact[2:4].isdigit():
        return False
    rearranged = compact[4:] + compact[:4]
    digits = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(digits) % 97 == 1


def luhn_valid(number: str) -> bool:
    """The Luhn checksum of a card number (digits only)."""
    digits = [int(d) for d in number if d.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def ahv_valid(number: str) -> bool:
    """The EAN-13 check digit of a Swiss AHV/AVS number (756.xxxx.xxxx.xx)."""
    digits = [int(d) for d in number if d.isdigit()]
    if len(digits) != 13 or digits[:3] != [7, 5, 6]:
        return False
    total = sum(d * (3 if i % 2 else 1) for i, d in enumerate(digits[:12]))
    return (10 - total % 10) % 10 == digits[12]


def _iban_at(text: str, start: int) -> int:
    """The end of the longest checksum-valid IBAN at ``start`` (0 when there is none): up to
    34 characters of the case of the first, single spaces allowed between them. The
    remainders mod 97 of every length are computed in one pass (a longer match may have run
    into the following word)."""
    upper = text[start].isupper()
    ends: list[int] = []  # ends[k]: the text offset after the (k+1)-th character
    pos = start
    while pos < len(text) and len(ends) < 34:
        ch = text[pos]
        if ch == " " and ends and pos + 1 < len(text) and text[pos + 1] != " ":
            pos += 1
            continue
        if not (ch.isascii() and (ch.isdigit() or (ch.isalpha() and ch.isupper() == upper))):
            break
        ends.append(pos + 1)
        pos += 1
    compact = "".join(ch for ch in text[start : ends[-1]] if ch != " ").upper() if ends else ""
    if len(compact) < 15:
        return 0
    head_digits = "".join(str(int(ch, 36)) for ch in compact[:4])
    head, shift = int(head_digits), 10 ** len(head_digits)
    best, remainder = 0, 0
    for k in range(4, len(compact)):
        digit = int(compact[k], 36)
        remainder = (remainder * (100 if digit > 9 else 10) + digit) % 97
        if k + 1 >= 15 and (remainder * shift + head) % 97 == 1:
            best = ends[k]
    return best


def _iban_findings(scan: Scan) -> Iterator[Finding]:
    text, after = scan.text, 0
    for start, _ in scan.spans(_IBAN_START, 1):
        if start < after:  # inside the IBAN just found
            continue
        end = _iban_at(text, start)
        if end:
            yield Finding(start=start, end=end, category="IBAN", value=text[start:end])
            after = end


def _checked(
    pattern: LinearPattern, category: str, valid: Callable[[str], bool]
) -> Callable[[Scan], Iterator[Finding]]:
    def find(scan: Scan) -> Iterator[Finding]:
        for start, end in scan.spans(pattern, 1):
            value = scan.text[start:end]
            if valid(value):
                yield Finding(start=start, end=end, category=category, value=value)

    return find


def _ipv6_ok(value: str) -> bool:
    if value.count(":") < 2:
        return False
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return True


def _phone_ok(value: str) -> bool:
    digits = sum(ch.isdigit() for ch in value)
    return 8 <= digits <= 15


def _ipv4_findings(scan: Scan) -> Iterator[Finding]:
    text = scan.text
    for start, end in scan.spans(_IPV4, 1):
        if _VERSION_WORDS.search(text[max(0, start - 20) : start]):
            continue
        yield Finding(start=start, end=end, category="IP", value=text[start:end])


#: where an international phone number without + and a Swiss one begin (Python's re: what
#: :func:`_pre_checks` reads only in a text with "00", or three digits together)
_INTL_START = re.compile(r"00[1-9]")
_SWISS_START = re.compile(r"0[1-9][0-9]")

#: what :func:`_pre_checks` says of a text none of :data:`_MATCH_DETECTORS` can find anything in
#: (one object: ``is`` tells it)
_NOTHING = (False,) * 8


def _pre_checks(text: str, shape: str, digits: int) -> tuple[bool, ...]:
    """The pre-check of each of :data:`_MATCH_DETECTORS`, in its order, false only where that
    detector cannot find anything in ``text`` (``shape`` and ``digits``: its
    :class:`~nyla.ai.pii_clues.CluedScan` clues): a necessary condition read off its pattern
    (:mod:`nyla.ai.pii_clues`), or off the pattern and its check of the value for the phone
    and IPv6 detectors (see :data:`_MATCH_DETECTORS`). :data:`_NOTHING` itself where every
    check is false. One call for all: most texts pass none, and a call per check costs
    twice what the checks do."""
    email = "@" in text  # an e-mail address has an @
    iban = "AA00" in shape or "aa00" in shape  # an IBAN two letters of one case, two digits
    # an IPv6 address "::" or eight groups (seven colons): ipaddress takes no other form
    ipv6 = ":" in text and ("::" in text or text.count(":") >= 7)
    if digits < 4:  # (every other pattern holds four digits or more)
        if email or iban or ipv6:
            return (email, iban, False, False, False, False, False, ipv6)
        return _NOTHING
    checks = (
        email,
        iban,
        digits >= 13 and "756" in text,  # an AHV number 13 digits from 756 on
        digits >= 13,  # a card number 13 digits
        # an international phone number + or 00[1-9], and 8 digits (_phone_ok)
        digits >= 8 and ("+" in text or ("00" in text and _INTL_START.search(text) is not None)),
        # a Swiss one 10 digits, the first three together: 0[1-9][0-9] (maybe in brackets)
        digits >= 10 and "000" in shape and _SWISS_START.search(text) is not None,
        # an IPv4 address four digits, three dots, and a digit on each side of one
        "0.0" in shape and text.count(".") >= 3,
        ipv6,
    )
    return _NOTHING if True not in checks else checks


def _pre_check(i: int) -> Callable[[CluedScan], bool]:
    return lambda s: _pre_checks(s.text, s.shape, s.digits)[i]


#: the detectors that find only where their own pattern matches (each searches the text from
#: its start first and yields nothing when that search finds nothing), with their patterns and
#: each one's pre-check (:func:`_pre_checks`)
_MATCH_DETECTORS: tuple[
    tuple[LinearPattern, Callable[[CluedScan], bool], Callable[[Scan], Iterator[Finding]]], ...
] = tuple(
    (pattern, _pre_check(i), find)
    for i, (pattern, find) in enumerate(
        (
            (_EMAIL, _checked(_EMAIL, "EMAIL", lambda v: True)),
            (_IBAN_START, _iban_findings),
            (_AHV, _checked(_AHV, "AHV", ahv_valid)),
            (_CARD, _checked(_CARD, "CARD", luhn_valid)),
            (_PHONE_INTL, _checked(_PHONE_INTL, "PHONE", _phone_ok)),
            (_PHONE_CH, _checked(_PHONE_CH, "PHONE", _phone_ok)),
            (_IPV4, _ipv4_findings),
            (_IPV6, _checked(_IPV6, "IP", _ipv6_ok)),
        )
    )
)


def _matched_findings(scan: CluedScan, checks: tuple[bool, ...]) -> list[Finding]:
    """Every detector's findings in the order they are reported (the IPv6 detector's after
    the context detectors'), each of :data:`_MATCH_DETECTORS` only where ``checks`` lets it."""
    last = len(_MATCH_DETECTORS) - 1
    found = [f for i in range(last) if checks[i] for f in _MATCH_DETECTORS[i][2](scan)]
    found += context_findings(scan)  # (pre-checks of its own, per detector)
    if checks[last]:
        found += _MATCH_DETECTORS[last][2](scan)
    return found


#: where any of :data:`_MATCH_DETECTORS` ' patterns matches (their alternation, groups made
#: plain): where a pre-check lets a text through, one search tells that none of them can find
#: anything in it, instead of one each (a round summary's digits and colons pass the checks)
_ANY_MATCH = compile_linear(
    "neutralizer.any_match",
    "|".join(f"(?:{p.source.replace('(?P<v>', '(?:')})" for p, _, _ in _MATCH_DETECTORS),
)


#: the number-shaped categories an identifier's digits can imitate (an IBAN or an e-mail
#: address is checked as a whole and kept)
_NUMERIC = frozenset({"CARD", "AHV", "PHONE", "IP"})


def _id_tokens(scan: Scan) -> list[tuple[int, int]]:
    """Spans of UUIDs and hex ids (a long hex run must mix letters and digits)."""
    spans = []
    for start, end in scan.spans(_ID_TOKEN, 1):
        value = scan.text[start:end]
        if "-" in value or (not value.isdigit() and not value.isalpha()):
            spans.append((start, end))
    return spans


def _outside_ids(found: list[Finding], ids: list[tuple[int, int]]) -> list[Finding]:
    """``found`` without number-shaped findings that lie inside an identifier (``ids`` are
    sorted and disjoint: one bisection per finding)."""
    starts = [a for a, _ in ids]
    kept = []
    for f in found:
        i = bisect.bisect_right(starts, f.start) - 1
        if f.category in _NUMERIC and i >= 0 and f.end <= ids[i][1]:
            continue
        kept.append(f)
    return kept


class DefaultNeutralizer:
    """E-mail, phone, IBAN, card, AHV and IP detector, and the context detectors (names,
    addresses, dates of birth, ID numbers). Findings may overlap across categories (a card
    number inside an IBAN-like string); the gate resolves overlaps.

    Every pattern runs on RE2 (:mod:`nyla.linear_regex`): time linear in the text, whatever
    the text."""

    id = "nyla.default"

    def find(self, text: str) -> list[Finding]:
        """Every personal-data span in ``text``."""
        if not text:
            return []
        if text.isascii():
            data = text.encode()
            shape = data.translate(SHAPE).decode()
            if "A" not in shape:
                # no capital, so no name and no address (pii_context), the case of most tool
                # arguments and results: the clues are read without a scan first
                digits = shape.count("0")
                if _pre_checks(text, shape, digits) is _NOTHING and (
                    digits < DATE_DIGITS or not date_shaped(text, shape)
                ):  # no date, so no date of birth, and no ID number: without capitals one is
                    # six digits together (may_hold_id), which a date's year is too
                    return []
            scan = CluedScan(text, data, shape)
        else:
            scan = CluedScan(text)
        checks = _pre_checks(text, scan.shape, scan.digits)
        if checks is not _NOTHING and _ANY_MATCH.search_spans(scan.data, 0) is not None:
            found = _matched_findings(scan, checks)
        else:
            found = context_findings(scan)  # none of the other detectors can find any
        if not found:
            return found
        ids = _id_tokens(scan)
        if ids:
            found = _outside_ids(found, ids)
        found.sort(key=lambda f: (f.start, -(f.end - f.start)))
        return found


@hookimpl
def nyla_neutralizers() -> list[DefaultNeutralizer]:
    """The kernel's default neutralizer."""
    return [DefaultNeutralizer()]
