"""``clean_text``: NUL bytes and lone surrogates become U+FFFD, the rest is kept as it is."""

from __future__ import annotations

import pytest

from nyla.text import clean_text, has_unstorable_chars


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("plain ascii", "plain ascii"),
        ("a\x00b", "a\ufffdb"),
        ("\x00", "\ufffd"),
        ("caf\u00e9 \U0001f600", "caf\u00e9 \U0001f600"),  # a pair is a character, kept
        ("lone \ud800 high", "lone \ufffd high"),
        ("lone \udfff low", "lone \ufffd low"),
        ("both \x00 and \udc00 and \u00e9", "both \ufffd and \ufffd and \u00e9"),
        ("", ""),
    ],
)
def test_nul_and_lone_surrogates_are_replaced(raw: str, clean: str) -> None:
    assert clean_text(raw) == clean
    assert not has_unstorable_chars(clean_text(raw))


def test_clean_ascii_text_is_the_same_object() -> None:
    text = "x" * 1000
    assert clean_text(text) is text


def test_the_limit_cuts_after_cleaning() -> None:
    assert clean_text("\x00abc\ud800", 3) == "\ufffdab"
    assert clean_text("abcdef", 10) == "abcdef"


def test_a_value_that_is_not_text_is_made_text() -> None:
    assert clean_text(12) == "12"  # type: ignore[arg-type]
