"""Postal addresses for the default neutralizer: Swiss, German and Austrian streets
(``Bahnhofstrasse 12``), French ones (``12, rue du Lac``), English ones (``221B Baker
Street``), post boxes, and the town after them (``8001 Zürich``); a town after an address
label.

The earlier pattern (``(?:Word )+Strasse``) took quadratic time on a long run of word
characters (issue 27); these run on RE2 with every repetition bounded.
"""

from __future__ import annotations

from collections.abc import Iterator

from nyla.ai.pii_clues import CluedScan, stems_pattern
from nyla.ai.pii_shapes import SP, W
from nyla.linear_regex import Scan, compile_linear
from nyla.models.neutralize import Finding

_UP = r"\p{Lu}"
#: a capitalised word (letters, digits, apostrophes, hyphens), as street and town names have
_WORD = _UP + rf"[{W}'’-]*"
_STREET_WORDS = (
    r"(?:strasse|straße|str\.|gasse|weg|platz|allee|ring|rain|halde|matte|acker|steig|ufer|"
    r"damm|graben|hof|berg|quai|promenade)"
)
_NUMBER = r"[0-9]{1,4}[a-zA-Z]?"
#: the French street words, the only street form without a number
_FRENCH_STREETS = (
    r"[Rr]ue|[Aa]venue|av\.|[Cc]hemin|ch\.|[Rr]oute|[Bb]oulevard|bd|[Pp]lace|[Qq]uai|[Ii]mpasse|"
    r"[Aa]llée|[Rr]uelle"
)
_STREET = (
    rf"(?:{_UP}[{W}'’-]*{_STREET_WORDS}|(?:{_WORD}{SP}){{1,4}}(?:Strasse|Straße|Gasse|"
    rf"Weg|Platz|Allee)){SP}{{1,3}}{_NUMBER}"
    rf"|(?:[0-9]{{1,4}}(?:{SP}?(?:bis|ter|[a-zA-Z]))?,?{SP}{{1,3}})?(?:{_FRENCH_STREETS})"
    rf"{SP}{{1,3}}(?:(?:de|du|des|la|le|l'|d'){SP}{{0,3}}){{0,3}}{_WORD}(?:[ \t-]{_WORD}){{0,4}}"
    rf"(?:{SP}{{1,3}}{_NUMBER})?"
    rf"|[0-9]{{1,5}}[A-Z]?{SP}{{1,3}}(?:{_WORD}{SP}{{1,3}}){{1,3}}(?:Street|St\.|Road|Rd\.|"
    r"Avenue|Ave\.|Lane|Drive|Way|Square)"
)
_POSTBOX = (
    rf"(?:Postfach|Case postale|CP|P\.?{SP}?O\.? Box|Boîte postale|BP){SP}{{1,3}}[0-9]{{1,6}}"
)
_TOWN = (
    rf"(?:(?:CH|D|DE|A|AT|F|FR)-)?[0-9]{{4,5}}{SP}{{1,3}}{_WORD}(?:{SP}{{1,3}}"
    rf"(?:(?:am|an|im|bei|sur|les|en|de){SP}{{1,3}})?{_WORD})?"
)
_ADDRESS = compile_linear(
    "pii.address",
    rf"(?P<v>(?:{_STREET}|{_POSTBOX})(?:{SP}{{0,3}}(?:,|\n){SP}{{0,3}}{_TOWN})?"
    rf"|(?:CH|D|DE|A|AT|F|FR)-[0-9]{{4,5}}{SP}{{1,3}}{_WORD})",
)
_LABELLED_TOWN = compile_linear(
    "pii.address_labelled",
    r"(?:^|[^\pL\pN_])(?:Adresse|Address|Wohnort|Domicile|Anschrift|PLZ/Ort|NPA/Localité|"
    rf"Indirizzo|Domicilio){SP}{{0,3}}:{SP}{{0,3}}(?P<v>{_TOWN})",
)


#: what every word of :data:`_FRENCH_STREETS` holds once case-folded
FRENCH_STEMS = ("rue", "avenue", "av.", "chemin", "ch.", "route", "boulevard", "bd", "place",
                "quai", "impasse", "allée")  # fmt: skip
_FRENCH_STEMS = stems_pattern(FRENCH_STEMS)


def may_hold_address(scan: CluedScan) -> bool:
    """False only where no pattern below can match: every address has a capitalised word, and
    a number (street, post box or postcode) unless it is French (:mod:`nyla.ai.pii_clues`)."""
    return scan.may_have_upper and (scan.digits > 0 or scan.mentions(_FRENCH_STEMS))


def address_findings(scan: Scan) -> Iterator[Finding]:
    """Street addresses, post boxes and labelled towns in the scanned text."""
    for pattern in (_ADDRESS, _LABELLED_TOWN):
        group = pattern.group("v")
        for start, end in scan.spans(pattern, group):
            value = scan.text[start:end].rstrip(" ,.")
            if value:
                yield Finding(start=start, end=start + len(value), category="ADDRESS", value=value)
