"""Dates of birth for the default neutralizer: a date after a birth label in German, English,
French or Italian (``Geburtsdatum``, ``geb.``, ``date of birth``, ``DOB``, ``born on``,
``né le``, ``date de naissance``, ``data di nascita``, ``nata il``, ``(*``), also with a few
words between (``Date of birth of the applicant: 14.03.1981``, ``born in Lucerne on 2 July
1975``), and a date a few words before ``geboren`` (``ist am 3. Mai 1990 geboren``).

Every common format is read: 14.03.1981, 14.3.81, 14/03/1981, 1981-03-14, 14. März 1981,
1er avril 1975, 5th of November 1968, 12-Feb-1985, March 14, 1981. A date without a birth
label (an invoice date, a deadline) is left alone.
"""

from __future__ import annotations

from collections.abc import Iterator

from nyla.ai.pii_clues import CluedScan, stems_pattern
from nyla.ai.pii_shapes import DATE, SP, W
from nyla.linear_regex import Scan, compile_linear
from nyla.models.neutralize import Finding

_LABELS = (
    r"geb\.|geboren(?:e|er)?|Geburtsdatum|Geb\.-Datum|Geburtstag|Geburt|"
    r"date of birth|birth ?date|DOB|D\.O\.B\.|born|"
    r"née?|date de naissance|naissance|data di nascita|(?-i:[Nn]at[oa])|nascita"
)
#: up to five words between the label and the date, none holding a digit and no clause
#: break (``Geburtsdatum fehlt, Eintritt am 01.03.2020`` is not a date of birth)
_GAP = rf"(?:{SP}{{1,3}}[\pL'’-]+){{0,5}}?"
_BIRTH_DATE = compile_linear(
    "pii.birth_date",
    rf"(?:^|[^{W}])(?:{_LABELS}){_GAP}{SP}{{0,3}}(?:[:(]|is|ist|lautet)?{SP}{{0,3}}"
    rf"(?P<v>{DATE})(?:$|[^0-9])",
    ignore_case=True,
)
#: the labels a date before them needs (``ist am 3. Mai 1990 geboren``)
_LABELS_AFTER = r"geboren|born|né|née|(?-i:[Nn]at[oa])"
_STARRED_DATE = compile_linear(
    "pii.birth_date_starred",
    rf"\({SP}{{0,2}}\*{SP}{{0,2}}(?P<v>{DATE})(?:$|[^0-9])",
    ignore_case=True,
)
_DATE_BEFORE_LABEL = compile_linear(
    "pii.birth_date_before",
    rf"(?:^|[^{W}.])(?P<v>{DATE})(?:{SP}{{1,3}}[\pL'’.-]+){{0,4}}?{SP}{{1,3}}"
    rf"(?:{_LABELS_AFTER})(?:$|[^\pL])",
    ignore_case=True,
)


#: what every label of :data:`_LABELS` and :data:`_LABELS_AFTER` holds once case-folded
#: (``geb`` stands for ``geb.``, ``geboren``, ``Geburtsdatum``, ``Geb.-Datum``, ``Geburt``...)
LABEL_STEMS = ("geb", "birth", "dob", "d.o.b", "born", "né", "naissance", "nascita", "nat")
_LABEL_STEMS = stems_pattern(LABEL_STEMS)


#: the fewest ASCII digits a date holds (``1.1.81``), read off :data:`DATE` (the tests read
#: it again from the pattern's parse)
DATE_DIGITS = 4


def may_hold_birth(scan: CluedScan) -> bool:
    """False only where no pattern below can match: each needs a date and a label, or ``(``
    and ``*`` for the starred form (:mod:`nyla.ai.pii_clues`). A date holds
    :data:`DATE_DIGITS` ASCII digits, and either a four-digit year or two digits together
    (the year of ``14.3.81``) and one of ``./-`` (:func:`date_shaped`)."""
    if scan.digits < DATE_DIGITS or not date_shaped(scan.text, scan.shape):
        return False
    text = scan.text
    return ("(" in text and "*" in text) or scan.mentions(_LABEL_STEMS)


def date_shaped(text: str, shape: str) -> bool:
    """False only where :data:`~nyla.ai.pii_shapes.DATE` cannot match in ``text`` (``shape``:
    its :attr:`~nyla.ai.pii_clues.CluedScan.shape`): its numeric forms hold ``[./-]`` and a
    two-digit or four-digit year, the others a four-digit year."""
    return "0000" in shape or ("00" in shape and ("." in text or "/" in text or "-" in text))


def birth_findings(scan: Scan) -> Iterator[Finding]:
    """Dates of birth in the scanned text."""
    for pattern in (_BIRTH_DATE, _STARRED_DATE, _DATE_BEFORE_LABEL):
        group = pattern.group("v")
        for start, end in scan.spans(pattern, group):
            value = scan.text[start:end].rstrip(" ,.")
            if value:
                yield Finding(start=start, end=start + len(value), category="DOB", value=value)
