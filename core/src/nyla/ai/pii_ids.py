"""Passport and identity-card numbers for the default neutralizer, after their label in
German, English, French or Italian (``Passnummer``, ``ID-Karte``, ``passport no.``,
``numéro de passeport``, ``carta d'identità``), also with words between (``Die Passnummer der
Antragstellerin lautet X4518273``).

A number standing right after its label (``Pass-Nr. 4F7K2``) is taken in any shape of 6-12
letters and digits; one further away only in the shape of a European document number, so
that ``Passport photos must be 35 x 45 mm`` or a model number keeps its digits:

- Switzerland, Austria: a letter and seven digits (``X4518273``)
- Germany: nine characters of the alphabet without vowels and ambiguous letters
  (``C01X00T47``, ``L01X00T47``)
- Italy: two letters and seven digits (``YA1234567``), the electronic card ``CA00000AA``
- France: two digits, two letters, five digits (``12AB34567``), the old card's 12 digits
- United Kingdom and United States: nine digits; Spain: eight digits and a letter
  (``12345678Z``); the Netherlands: ``NP5F8J4K1``
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from nyla.ai.pii_clues import CluedScan, stems_pattern
from nyla.ai.pii_shapes import W
from nyla.linear_regex import Scan, compile_linear
from nyla.models.neutralize import Finding

_LABELS = (
    r"Pass(?:nummer|nr\.?|-Nr\.?|es)?|Reisepass(?:nummer|es)?|Personalausweis(?:nummer|es)?|"
    r"Ausweis(?:nummer|-Nr\.?|es)?|Identitätskarte|Identitätsausweis|ID-Karte|"
    r"Ausländerausweis|Dokumentnummer|"
    r"(?i:passports?|passport (?:no\.?|number)|id[- ]card|identity card|identity document|"
    r"id document|national id|id[- ](?:no\.?|nr\.?|number)|document number|dni|nie|"
    r"passeport|numéro de passeport|carte d'identité|cni|pièce d'identité|passaporto|"
    r"numero di passaporto|carta d'identità|cie|documento d'identità|numero documento)"
)
# the label, at most 60 characters without a digit or a line break, then a token holding a
# digit (the shape is checked in Python)
_ID_NUMBER = compile_linear(
    "pii.id_number",
    rf"(?:^|[^{W}])(?:{_LABELS})(?P<gap>[^{W}\n][^0-9\n]{{0,60}}?)"
    rf"(?P<v>[A-Za-z]{{0,5}}[0-9][A-Za-z0-9]{{2,11}})(?:$|[^{W}])",
)
# Python's re on the gap and the value only (at most 60 and 17 characters): bounded input
# what may stand between a label and a number of any shape
_ADJACENT = re.compile(
    r"\s*(?:[:#(]|-?Nr\.?|No\.?|n[°o.]|number|Nummer|numéro|numero)?\s*[:#]?\s*", re.IGNORECASE
)
_SHAPES = re.compile(
    r"[A-Z][0-9]{7}|[A-Z]{2}[0-9]{7}|[A-Z]{2}[0-9]{5}[A-Z]{2}|[0-9]{2}[A-Z]{2}[0-9]{5}"
    r"|[CFGHJKLMNPRTVWXYZ][CFGHJKLMNPRTVWXYZ0-9]{8}|[0-9]{9}|[0-9]{12}|[0-9]{8}[A-Z]"
    r"|[XYZ][0-9]{7}[A-Z]|[A-NP-Z]{2}[A-NP-Z0-9]{6}[0-9]"
)


def _document_number(value: str, gap: str) -> bool:
    """Whether ``value`` (6-16 characters) is an ID number after a label and ``gap``."""
    if _SHAPES.fullmatch(value):
        return True
    adjacent = _ADJACENT.fullmatch(gap) is not None
    return adjacent and 6 <= len(value) <= 12 and value == value.upper()


#: what every label of :data:`_LABELS` holds once case-folded (``id-``/``id `` for
#: ``ID-Karte``, ``id card``, ``id no.``; ``identit`` for ``Identitätskarte``, ``carte d'identité``)
LABEL_STEMS = (
    "pass", "ausweis", "identit", "id-", "id ", "national id", "dokument", "document",
    "dni", "nie", "cni", "cie",
)  # fmt: skip
_LABEL_STEMS = stems_pattern(LABEL_STEMS)


def may_hold_id(scan: CluedScan) -> bool:
    """False only where :func:`id_findings` finds nothing: :data:`_ID_NUMBER` needs a label
    and a digit (:mod:`nyla.ai.pii_clues`), and a number it keeps is 6 or more characters of
    ``A``-``Z`` and ``0``-``9`` (:func:`_document_number`), so in a text without capitals six
    digits together."""
    if not scan.digits or (not scan.may_have_upper and "000000" not in scan.shape):
        return False
    return scan.mentions(_LABEL_STEMS)


def id_findings(scan: Scan) -> Iterator[Finding]:
    """Passport and identity-card numbers in the scanned text."""
    text, gap_group, group = scan.text, _ID_NUMBER.group("gap"), _ID_NUMBER.group("v")
    for match in scan.matches(_ID_NUMBER, group):
        start, end = match[group]
        a, b = match[gap_group]
        if _document_number(text[start:end], text[a:b]):
            yield Finding(start=start, end=end, category="IDNUMBER", value=text[start:end])
