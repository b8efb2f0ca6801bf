"""Every rule of the answer scoring: number formats, sign, tolerance, echoes, shotgun answers."""

from __future__ import annotations

import pytest

from nyla.eval.scoring import SHOTGUN_MIN_LIMIT, numbers_in, numeric_ok


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("CHF 1'234.50", [1234.5]),  # Swiss apostrophe grouping
        ("CHF 1’234.50", [1234.5]),  # typographic apostrophe
        ("1'234'567", [1234567.0]),
        ("1.234,50 Franken", [1234.5]),  # German: dot groups, comma decimal
        ("1.234.567", [1234567.0]),  # German grouping without decimals
        ("1,234.50", [1234.5]),  # English grouping
        ("1,234,567.89", [1234567.89]),
        ("1,234", [1234.0]),  # a comma before exactly three digits groups thousands
        ("12,50", [12.5]),  # otherwise a comma is the decimal separator
        ("1234,5", [1234.5]),
        ("1.234", [1.234]),  # a single dot group is a decimal point
        ("CHF 1 234.–", [1234.0]),  # space grouping and ".–" for no rappen
        ("CHF 1\u00a0234.50", [1234.5]),  # no-break space
        ("CHF 1\u202f234,-", [1234.0]),  # thin space, ",-"
        ("1234.5", [1234.5]),
    ],
)
def test_number_formats(text: str, numbers: list[float]) -> None:
    assert numbers_in(text) == numbers


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("-12.00", [-12.0]),
        ("a loss of -1'234.50", [-1234.5]),
        ("\u22121’234.5", [-1234.5]),  # Unicode minus
        ("\u2013 500", [-500.0]),  # en dash with a space
        ("balance: -370,491.60.", [-370491.6]),  # sentence full stop is not a decimal
    ],
)
def test_signs(text: str, numbers: list[float]) -> None:
    assert numbers_in(text) == numbers


@pytest.mark.parametrize(
    "text",
    [
        "on 2025-03-31",  # ISO date
        "in 2025-03",  # period
        "am 31.03.2025",  # Swiss date
        "invoice RE-2025-0042",  # reference: neither a number nor a negative one
        "in Q1",  # glued to a word
        "account 6570a",
    ],
)
def test_dates_references_and_glued_numbers_are_not_amounts(text: str) -> None:
    assert numbers_in(text) == []


def test_several_numbers_in_order() -> None:
    assert numbers_in("Debits 21'837.30, credits 12.00; net -21 825.30") == [
        21837.3,
        12.0,
        -21825.3,
    ]


def test_sign_must_match() -> None:
    assert numeric_ok("The VAT due is -16'278.70", [-16278.7])
    assert not numeric_ok("The VAT due is 16'278.70", [-16278.7])
    assert not numeric_ok("The balance is -5'000.00", [5000.0])


def test_tolerance_is_the_questions() -> None:
    assert numeric_ok("CHF 100.01", [100.0], tolerance=0.01)
    assert not numeric_ok("CHF 100.02", [100.0], tolerance=0.01)
    assert numeric_ok("CHF 100.40", [100.0], tolerance=0.5)
    assert not numeric_ok("7 entries", [8.0], tolerance=0)
    assert numeric_ok("8 entries", [8.0], tolerance=0)


def test_each_expected_number_needs_its_own_occurrence() -> None:
    assert not numeric_ok("Both were 500.00", [500.0, 500.0])
    assert numeric_ok("Debits 500.00 and credits 500.00", [500.0, 500.0])


def test_every_expected_number_must_appear() -> None:
    assert not numeric_ok("Debits 21'837.30", [21837.3, 12.0])
    assert numeric_ok("Credits 12.00 and debits 21'837.30", [21837.3, 12.0])  # any order


def test_a_list_of_candidates_is_not_an_answer() -> None:
    guesses = ", ".join(f"{n}'000.00" for n in range(1, SHOTGUN_MIN_LIMIT + 2))
    assert numbers_in(guesses)[0] == 1000.0
    assert not numeric_ok(f"It is one of {guesses}", [1000.0])
    few = ", ".join(f"{n}'000.00" for n in range(1, SHOTGUN_MIN_LIMIT + 1))
    assert numeric_ok(f"It is one of {few}", [1000.0])


def test_numbers_echoed_from_the_question_do_not_count_as_candidates() -> None:
    question = "Debits of accounts 1020, 1021, 1022, 1100, 1170, 1171 and 1000 in 2025?"
    answer = "1020: 10.00, 1021: 20.00, 1022: 30.00, 1100: 1.00, 1170: 2.00, 1171: 3.00, 1000: 4.00"
    expected = [10.0, 20.0, 30.0, 1.0, 2.0, 3.0, 4.0]
    assert numeric_ok(answer, expected, question=question)
    assert not numeric_ok(answer + ", 9.00, 8.00" * 8, expected, question=question)


def test_without_expected_numbers_any_answer_but_an_empty_one_passes() -> None:
    assert numeric_ok("The account is 1020.", [])
    assert not numeric_ok("   ", [])
