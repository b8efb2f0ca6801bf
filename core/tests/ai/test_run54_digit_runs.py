"""A short ASCII text's numbers count as :func:`nyla.ai.tokens.digit_tokens` says (the
short path writes the rule out): groups of three, each run of digits on its own."""

from __future__ import annotations

from nyla.ai import tokens


def test_each_run_of_digits_in_a_short_text_counts_in_groups_of_three() -> None:
    for n in range(1, 40):
        digits = "7" * n
        assert len(digits) < tokens._MANY_RUNS
        assert tokens._count_text(digits) == tokens.digit_tokens(n) == (n + 2) // 3
        # a word, a symbol and two numbers: 1 + 1 + each number's groups
        text = f"read {digits}; {'1' * (n % 5 + 1)}"
        expected = 1 + 1 + tokens.digit_tokens(n) + tokens.digit_tokens(n % 5 + 1)
        assert tokens._count_text(text) == expected, text
