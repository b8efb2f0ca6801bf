"""The kernel's default neutralizer (a built-in plugin): finds e-mail addresses, phone
numbers (international and Swiss formats), IBANs (checksum-verified), payment card numbers
(Luhn), Swiss AHV/AVS numbers (EAN-13 check digit) and IPv4/IPv6 addresses.

Checksums keep false positives down where a format alone would match ordinary numbers;
phone numbers need a ``+`` / ``00`` country prefix or the Swiss ``0xx xxx xx xx`` shape so that
dates and amounts are left alone.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator

from nyla.ai.pii_context import context_findings
from nyla.hookspecs import hookimpl
from nyla.models.neutralize import Finding

# local part and domain labels in any script (internationalised addresses: jürg@bäckerei.ch)
_EMAIL = re.compile(
    r"(?<![\w.!#$%&'*+/=?^`{|}~-])"
    r"[\w!#$%&'*+/=?^`{|}~-]+(?:\.[\w!#$%&'*+/=?^`{|}~-]+)*"
    r"@(?:[^\W_](?:[\w-]*[^\W_])?\.)+[^\W\d_](?:[\w-]*[^\W_])?"
    r"(?![\w-])"
)
_SEP = r"[ \t./-]?"
_PHONE_INTL = re.compile(
    r"(?<![\w+])(?:\+|00)[1-9]\d{0,2}" + _SEP + r"(?:\(0\)" + _SEP + r")?"
    r"(?:\(?\d{1,4}\)?" + _SEP + r"){1,5}\d{2,4}(?![\w])"
)
_PHONE_CH = re.compile(
    r"(?<![\w+.(])(?:0[1-9]\d|\(0[1-9]\d\))"
    + _SEP
    + r"\d{3}"
    + _SEP
    + r"\d{2}"
    + _SEP
    + r"\d{2}(?![\w])"
)
# upper or lower case throughout (a lowercase word after an IBAN is not part of it)
_IBAN = re.compile(
    r"(?<![A-Za-z0-9])(?:[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}|[a-z]{2}\d{2}(?: ?[a-z0-9]){11,30})"
)
# a dotted quad right after one of these words is a version number, not an address
_VERSION_WORDS = re.compile(
    r"(?:\b(?:release|version|ver|v|build|rev|revision|firmware|patch|update|stand|mise à jour)"
    r"\.?\s*:?\s*"
    r"|\bv)$",
    re.IGNORECASE,
)
# not inside a longer token: the digits of a UUID or a hash are not a card or AHV number
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w])")
_AHV = re.compile(r"(?<!\w)756[. ]?\d{4}[. ]?\d{4}[. ]?\d{2}(?![\w])")
_IPV4 = re.compile(
    r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?!\.?\d)"
)
# a UUID or a hex hash/id (letters and digits, 16+ characters): digits inside one are part of
# an identifier the model has to send back unchanged, never personal data
_ID_TOKEN = re.compile(
    r"(?<![\w-])(?:[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
    r"|(?=[0-9A-Fa-f]*[A-Fa-f])(?=[0-9A-Fa-f]*\d)[0-9A-Fa-f]{16,})(?![\w-])"
)
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")


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


def _iban_findings(text: str) -> Iterator[Finding]:
    pos = 0
    while (match := _IBAN.search(text, pos)) is not None:
        value = match.group(0)
        pos = match.start() + 1
        # the pattern may run into following words; shrink until the checksum holds, then go
        # on scanning right after the IBAN found (the next one may start inside this match)
        for end in range(len(value), 14, -1):
            candidate = value[:end].rstrip()
            if candidate != value[:end]:
                continue
            if iban_valid(candidate):
                start = match.start()
                yield Finding(start=start, end=start + end, category="IBAN", value=candidate)
                pos = start + end
                break


def _checked(
    pattern: re.Pattern[str], category: str, valid: Callable[[str], bool]
) -> Callable[[str], Iterator[Finding]]:
    def find(text: str) -> Iterator[Finding]:
        for match in pattern.finditer(text):
            if valid(match.group(0)):
                yield Finding(
                    start=match.start(), end=match.end(), category=category, value=match.group(0)
                )

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


def _ipv4_findings(text: str) -> Iterator[Finding]:
    for match in _IPV4.finditer(text):
        if _VERSION_WORDS.search(text[max(0, match.start() - 20) : match.start()]):
            continue
        yield Finding(start=match.start(), end=match.end(), category="IP", value=match.group(0))


_DETECTORS: tuple[Callable[[str], Iterator[Finding]], ...] = (
    _checked(_EMAIL, "EMAIL", lambda v: True),
    _iban_findings,
    _checked(_AHV, "AHV", ahv_valid),
    _checked(_CARD, "CARD", luhn_valid),
    _checked(_PHONE_INTL, "PHONE", _phone_ok),
    _checked(_PHONE_CH, "PHONE", _phone_ok),
    _ipv4_findings,
    context_findings,
    _checked(_IPV6, "IP", _ipv6_ok),
)


#: the number-shaped categories an identifier's digits can imitate (an IBAN or an e-mail
#: address is checked as a whole and kept)
_NUMERIC = frozenset({"CARD", "AHV", "PHONE", "IP"})


def _inside_id(finding: Finding, ids: list[tuple[int, int]]) -> bool:
    return finding.category in _NUMERIC and any(
        a <= finding.start and finding.end <= b for a, b in ids
    )


class DefaultNeutralizer:
    """E-mail, phone, IBAN, card, AHV and IP detector. Findings may overlap across
    categories (a card number inside an IBAN-like string); the gate resolves overlaps."""

    id = "nyla.default"

    def find(self, text: str) -> list[Finding]:
        """Every personal-data span in ``text``."""
        if not text:
            return []
        found: list[Finding] = []
        for detector in _DETECTORS:
            found.extend(detector(text))
        ids = [(m.start(), m.end()) for m in _ID_TOKEN.finditer(text)]
        if ids:
            found = [f for f in found if not _inside_id(f, ids)]
        found.sort(key=lambda f: (f.start, -(f.end - f.start)))
        return found


@hookimpl
def nyla_neutralizers() -> list[DefaultNeutralizer]:
    """The kernel's default neutralizer."""
    return [DefaultNeutralizer()]
