"""Where a value the gate found, or one its session already holds, stands in a text as a word
of its own (:func:`known_findings`): the gate replaces a value found once wherever it appears
later, whether or not a detector would find it there (see :mod:`nyla.ai.neutralize`)."""

from __future__ import annotations

from collections.abc import Iterable

from nyla.models.neutralize import Finding


def known_findings(
    text: str, found: list[Finding], held: Iterable[tuple[str, str]]
) -> list[Finding]:
    """Every place in ``text`` where a value of ``found`` or of ``held`` (value, category: what
    the session already holds) stands as a word of its own (its first and last character not
    run on by a letter or digit), e.g. the bare name a detector found after a title elsewhere. One ``str.find``
    pass per value: time linear in the text for each. The gate's overlap rule then keeps one
    finding per span."""
    values = {f.value: f.category for f in found}
    for value, category in held:
        values.setdefault(value, category)
    out: list[Finding] = []
    for value, category in values.items():
        at = text.find(value)
        while at != -1:
            end = at + len(value)
            if _stands_alone(text, at, end):
                out.append(Finding(start=at, end=end, category=category, value=value))
            at = text.find(value, at + 1)
    return out


def _stands_alone(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is not part of a longer word or number."""
    before = start > 0 and _word_char(text[start - 1]) and _word_char(text[start])
    after = end < len(text) and _word_char(text[end]) and _word_char(text[end - 1])
    return not (before or after)


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"
