"""Detectors of the default neutralizer that need context: names (after titles, roles,
labels and greetings, and under closing formulas), postal addresses, dates of birth and
passport / ID numbers after their label. German, English, French and Italian.

Only the value is replaced (``Herr [NAME_1]``, ``geb. [DOB_1]``) so the text stays readable.
Each detector lives in its own module; all run on RE2 (:mod:`nyla.linear_regex`), each after a
pure-Python pre-check that tells where its patterns cannot match (:mod:`nyla.ai.pii_clues`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from nyla.ai.pii_address import address_findings, may_hold_address
from nyla.ai.pii_birth import DATE_DIGITS, birth_findings, may_hold_birth
from nyla.ai.pii_clues import CluedScan
from nyla.ai.pii_ids import id_findings, may_hold_id
from nyla.ai.pii_names import may_hold_name, name_findings
from nyla.linear_regex import Scan
from nyla.models.neutralize import Finding

#: each context detector with its pre-check (false only where the detector finds nothing)
CONTEXT_DETECTORS: tuple[
    tuple[Callable[[CluedScan], bool], Callable[[Scan], Iterator[Finding]]], ...
] = (
    (may_hold_name, name_findings),
    (may_hold_birth, birth_findings),
    (may_hold_id, id_findings),
    (may_hold_address, address_findings),
)


def context_findings(scan: Scan | str) -> list[Finding]:
    """Names, addresses, dates of birth and ID numbers found through their context (a list,
    not a generator: most texts hold none, and a generator's frame costs more than the
    pre-checks that tell)."""
    if not isinstance(scan, CluedScan):  # (a test, not a call: a frame costs more)
        scan = CluedScan(scan if isinstance(scan, str) else scan.text)
    found: list[Finding] = []
    if not scan.may_have_upper:
        # no capital (most tool arguments and results): the name and address pre-checks
        # need one, so only a date of birth or an ID number can be there, each found
        # where its own pre-check lets it (in the order of CONTEXT_DETECTORS); a date holds
        # four digits
        if scan.digits >= DATE_DIGITS:
            if may_hold_birth(scan):
                found.extend(birth_findings(scan))
            if may_hold_id(scan):
                found.extend(id_findings(scan))
        return found
    for may_hold, find in CONTEXT_DETECTORS:
        if may_hold(scan):
            found.extend(find(scan))
    return found
