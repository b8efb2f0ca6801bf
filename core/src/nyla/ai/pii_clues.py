"""Pure-Python pre-checks for the default neutralizer's detectors: before a detector runs its
RE2 patterns over a text, a few substring tests tell whether the text can hold anything the
detector finds. Most texts of an agent run are short tool arguments and results
(``{"round": 3}``, ``read 5 ok``); on those the patterns cost ~30 µs a text and find nothing,
the checks ~1 µs.

A check may say "maybe" for a text that holds nothing (the detector then runs as before); it
must never say "no" for a text a pattern matches. Each check is a necessary condition of its
patterns, read off them:

- a label the pattern requires, as one of a few *stems* (``geb`` for ``geb.``,
  ``geboren``, ``Geburtsdatum``, ...), looked up in ``str.casefold()`` of the text. RE2's
  case-insensitive match pairs a letter with the letters of its simple case-folding orbit
  (``k``, ``K``, Kelvin sign ``K``; ``s``, ``S``, long ``ſ``); each member case-folds in Python to
  the same letter, so a matched label case-folds to the label's own case-fold, and that holds a
  stem. The tests check both halves exhaustively: every code point RE2 pairs with a label's
  letter, and every string each label alternative spells;
- ASCII digits (``[0-9]``: RE2's classes here are ASCII), counted in the text's *shape* (its
  UTF-8 bytes with ASCII digits as ``0``, ``A``-``Z`` as ``A``, ``a``-``z`` as ``a``, everything
  else kept), and the like (an IBAN begins with two letters of one case and two digits);
- a capital letter (``\\p{Lu}``): every code point RE2 has in ``\\p{Lu}`` is ``str.isupper()``
  (tested over all of Unicode), so a text with one is not ``str.islower()``.
"""

from __future__ import annotations

import re

from nyla.linear_regex import Scan

#: the byte table of :attr:`CluedScan.shape` (``bytes.translate``)
SHAPE = bytes(
    ord("0") if 48 <= b <= 57
    else ord("A") if 65 <= b <= 90
    else ord("a") if 97 <= b <= 122
    else b
    for b in range(256)
)  # fmt: skip


class CluedScan(Scan):
    """A :class:`~nyla.linear_regex.Scan` with what the pre-checks read, once per text (plain
    attributes: ``functools.cached_property`` takes a lock on each first read, ~1 µs)."""

    def __init__(self, text: str, data: bytes | None = None, shape: str | None = None) -> None:
        """``data`` and ``shape``, where given, are what the scan would make of ``text``: its
        UTF-8 and :attr:`shape` (a caller that read them already)."""
        # Scan's three fields, set here (a call of Scan.__init__ costs ~300 instructions a
        # text); the plain encode takes the codec's fast path, and only a text with a lone
        # surrogate, which it cannot encode, pays for the error handler
        self.text = text
        if data is None:
            try:
                data = text.encode()
            except UnicodeEncodeError:
                data = text.encode("utf-8", "replace")
        self.data = data
        self.ascii = ascii_only = len(data) == len(text)
        if shape is None:
            # (one character a byte: latin-1 keeps a non-ASCII text's shape a str of one-byte
            # characters, which the tests below search fastest; ASCII decodes either way)
            mapped = data.translate(SHAPE)
            shape = mapped.decode() if ascii_only else mapped.decode("latin-1")
        #: the UTF-8 text with ASCII digits as ``0``, ``A``-``Z`` as ``A``, ``a``-``z`` as
        #: ``a`` (the bytes of a non-ASCII character are all >= 0x80 and stay as they are),
        #: one character a byte: a ``str``, since ``in`` on ``bytes`` first tries the piece as
        #: an integer and formats the ``TypeError`` (~8x a ``str`` test)
        self.shape = shape
        #: how many ASCII digits the text holds
        self.digits = shape.count("0")
        #: false only where the text holds no ``\p{Lu}`` letter (in ASCII, ``\p{Lu}`` is
        #: ``A``-``Z``; ``str.islower`` is also false for a text without cased letters)
        self.may_have_upper = "A" in shape if self.ascii else not text.islower()
        self._folded: str | None = None

    @property
    def folded(self) -> str:
        """The text case-folded (``str.casefold``), computed on first use."""
        if self._folded is None:
            self._folded = self.text.casefold()
        return self._folded

    def mentions(self, stems: re.Pattern[str]) -> bool:
        """Whether the case-folded text contains one of ``stems`` (a :func:`stems_pattern`)."""
        return stems.search(self.folded) is not None


def stems_pattern(stems: tuple[str, ...]) -> re.Pattern[str]:
    """One search for any of ``stems`` (each already case-folded) as a substring: Python's re
    on an alternation of literals, which has no repetition, so time linear in the text; one
    search costs about what two ``in`` tests do, a tuple of ten tests five times that."""
    return re.compile("|".join(map(re.escape, stems)))
