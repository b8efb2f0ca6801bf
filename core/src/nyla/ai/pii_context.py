"""Detectors of the default neutralizer that need context: names (after titles, roles,
labels and greetings, and under closing formulas), postal addresses, dates of birth and
passport / ID numbers after their label. German, English, French and Italian.

Only the value is replaced (``Herr [NAME_1]``, ``geb. [DOB_1]``) so the text stays readable.
Each detector lives in its own module; all run on RE2 (:mod:`nyla.linear_regex`).
"""

from __future__ import annotations

from collections.abc import Iterator

from nyla.ai.pii_address import address_findings
from nyla.ai.pii_birth import birth_findings
from nyla.ai.pii_ids import id_findings
from nyla.ai.pii_names import name_findings
from nyla.linear_regex import Scan
from nyla.models.neutralize import Finding


def context_findings(scan: Scan | str) -> Iterator[Finding]:
    """Names, addresses, dates of birth and ID numbers found through their context."""
    if isinstance(scan, str):
        scan = Scan(scan)
    yield from name_findings(scan)
    yield from birth_findings(scan)
    yield from id_findings(scan)
    yield from address_findings(scan)
