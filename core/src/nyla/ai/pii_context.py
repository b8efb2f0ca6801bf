"""Detectors of the default neutralizer that need context: names (after titles, roles,
labels and greetings, and under closing formulas), postal addresses, dates of birth and
passport / ID numbers after their label. German, English, French and Italian.

Only the value is replaced (``Herr [NAME_1]``, ``geb. [DOB_1]``) so the text stays readable.
Each detector lives in its own module; all run on RE2 (:mod:`nyla.linear_regex`).
"""

from __future__ import annotations

from collections.abc import Iterator

from nyla.ai.pii_address import ADDRESS_PATTERNS, address_findings
from nyla.ai.pii_birth import BIRTH_PATTERNS, birth_findings
from nyla.ai.pii_ids import ID_PATTERNS, id_findings
from nyla.ai.pii_names import name_findings
from nyla.linear_regex import Scan
from nyla.models.neutralize import Finding

#: every pattern the detectors of dates of birth, ID numbers and addresses find with: where
#: none matches, they find nothing (the name patterns are kept apart: in one alternation with
#: the others RE2's automaton outgrows its memory and falls back to its slower engine)
BIRTH_ID_ADDRESS_PATTERNS = (*BIRTH_PATTERNS, *ID_PATTERNS, *ADDRESS_PATTERNS)


def context_findings(scan: Scan | str) -> Iterator[Finding]:
    """Names, addresses, dates of birth and ID numbers found through their context."""
    if isinstance(scan, str):
        scan = Scan(scan)
    yield from name_findings(scan)
    yield from birth_findings(scan)
    yield from id_findings(scan)
    yield from address_findings(scan)
