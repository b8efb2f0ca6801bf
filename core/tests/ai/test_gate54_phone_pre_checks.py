"""The phone pre-checks read where a number begins: 00[1-9] or +, and a Swiss 0[1-9][0-9]."""

from __future__ import annotations

import pytest

from nyla.ai import default_neutralizer as dn
from nyla.ai.pii_clues import SHAPE

SUMMARY = "read_a: read 100 ok\nread_b: read 101 ok\nread_c: read 102 ok\nwrite_d: write 34 ok"


def _checks(text: str) -> tuple[bool, ...]:
    shape = text.encode().translate(SHAPE).decode()
    return dn._pre_checks(text, shape, shape.count("0"))


def test_three_digits_together_without_a_phone_start_pass_no_check() -> None:
    assert _checks(SUMMARY) is dn._NOTHING
    assert dn.DefaultNeutralizer().find(SUMMARY) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("call 020 123 45 67 now", "020 123 45 67"),
        ("call (020) 123 45 67 now", "(020) 123 45 67"),
        ("call 099 100 00 00", "099 100 00 00"),
        ("call 0049 30 1234567 now", "0049 30 1234567"),
        ("call 0091 30 1234567 now", "0091 30 1234567"),
        ("call +49 30 1234567 now", "+49 30 1234567"),
    ],
)
def test_phone_numbers_at_each_start_are_still_found(text: str, value: str) -> None:
    assert [(f.category, f.value) for f in dn.DefaultNeutralizer().find(text)] == [("PHONE", value)]
