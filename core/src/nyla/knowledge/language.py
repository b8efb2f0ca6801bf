"""Which language a piece of text is written in: German, English, French, Italian, or
unknown (``""``).

A scorer of its own, offline and without a model: each word that is a stop word of a
language (the Snowball lists PostgreSQL's text search uses, shipped in ``stopwords/``) is
evidence for that language, split between the languages sharing it; word endings and
letters that belong to one language (``-ung``, ``-zione``, ``ß``, ``ç``) add weaker
evidence. A text is given the best language when the evidence is strong enough and clearly
ahead of the runner-up, else it stays unknown and is searched with the ``simple``
configuration. Measured on paragraphs of the Debian Reference and the Debian manual pages
in the four languages (``bench/lang_detect.py``, see docs/knowledge.md).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from importlib import resources

#: the languages detected, by ISO 639-1 code
LANGUAGES = ("de", "en", "fr", "it")

#: at most this many characters of a text are read (a chunk is ~1,500)
MAX_CHARS = 4000
#: evidence a text needs before it is given a language
MIN_EVIDENCE = 1.5
#: how far the best language must be ahead of the runner-up (a share of its score)
MIN_LEAD = 0.25

#: letters (a word); apostrophes end a word, so ``l'acqua`` gives ``l`` and ``acqua``
_WORD = re.compile(r"[^\W\d_]+")

#: frequent function words the Snowball lists leave out (or spell otherwise: ``dass``)
_EXTRA_STOP = {
    "de": "dass ab bitte beim darf dürfen gibt sowie wurde wurden worden wird kein sind nein",
    "en": "would could also may must shall yes",
    "fr": "cette ces ils elles leurs peut être sont dont aussi cela oui non",
    "it": "della delle degli sono questo perché essere può anche oppure",
}

#: (word ending, language, weight): endings frequent in one language's words
_ENDINGS: tuple[tuple[str, str, float], ...] = (
    ("ung", "de", 0.6),
    ("ungen", "de", 0.4),
    ("heit", "de", 0.6),
    ("keit", "de", 0.6),
    ("lich", "de", 0.5),
    ("isch", "de", 0.4),
    ("chen", "de", 0.4),
    ("sch", "de", 0.3),
    ("tz", "de", 0.3),
    ("ing", "en", 0.4),
    ("ly", "en", 0.4),
    ("ed", "en", 0.25),
    ("ness", "en", 0.5),
    ("ship", "en", 0.4),
    ("eux", "fr", 0.5),
    ("eau", "fr", 0.5),
    ("aux", "fr", 0.4),
    ("ique", "fr", 0.3),
    ("ée", "fr", 0.6),
    ("ées", "fr", 0.6),
    ("ait", "fr", 0.4),
    ("ent", "fr", 0.15),
    ("zione", "it", 0.7),
    ("zioni", "it", 0.7),
    ("mente", "it", 0.4),
    ("etto", "it", 0.4),
    ("ato", "it", 0.3),
    ("ata", "it", 0.3),
    ("ità", "it", 0.7),
    ("gli", "it", 0.4),
    ("cchi", "it", 0.4),
)
_BY_LENGTH = sorted({len(e) for e, _, _ in _ENDINGS}, reverse=True)
_ENDING_OF = {e: (lang, w) for e, lang, w in _ENDINGS}

#: letters that occur in one of the four languages only (per letter, per text, capped)
_LETTERS = {"ä": "de", "ö": "de", "ü": "de", "ß": "de", "ç": "fr", "œ": "fr", "ê": "fr"}
_LETTER_WEIGHT = 0.5
_LETTER_CAP = 3


def fold(word: str) -> str:
    """``word`` lower-cased without accents (what the text search configurations index:
    ``Zürich`` and ``Zurich`` are one word); ``ß`` becomes ``ss``."""
    if word.isascii():  # (no ASCII character decomposes or combines: lower-casing is all)
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.lower().replace("ß", "ss"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@functools.cache
def stop_words(language: str) -> frozenset[str]:
    """The stop words of ``language`` (as written, lower case)."""
    text = resources.files("nyla.knowledge").joinpath(f"stopwords/{language}.txt")
    words = text.read_text(encoding="utf-8").split()
    return frozenset(words) | frozenset(_EXTRA_STOP[language].split())


@functools.cache
def _stop_weights() -> dict[str, tuple[tuple[str, float], ...]]:
    """word -> ((language, weight), ...): a word shared by n languages counts 1/n for each."""
    owners: dict[str, list[str]] = {}
    for language in LANGUAGES:
        for word in stop_words(language):
            owners.setdefault(word, []).append(language)
    return {w: tuple((lang, 1.0 / len(ls)) for lang in ls) for w, ls in owners.items()}


@functools.cache
def folded_stop_words() -> frozenset[str]:
    """Every stop word of the four languages, folded (a query word found here carries no
    meaning of its own in at least one language)."""
    return frozenset(fold(w) for language in LANGUAGES for w in stop_words(language))


def is_stop_word(word: str, languages: Iterable[str] = LANGUAGES) -> bool:
    """True when ``word`` (any case or accents) is a stop word of one of ``languages``."""
    folded = fold(word)
    return any(folded in _folded(language) for language in languages)


@functools.cache
def _folded(language: str) -> frozenset[str]:
    return frozenset(fold(w) for w in stop_words(language))


def scores(text: str) -> dict[str, float]:
    """The evidence for each language in ``text`` (its first :data:`MAX_CHARS` characters)."""
    found = dict.fromkeys(LANGUAGES, 0.0)
    sample = text[:MAX_CHARS].lower()
    weights = _stop_weights()
    for word in _WORD.findall(sample):
        shared = weights.get(word)
        if shared is not None:
            for language, weight in shared:
                found[language] += weight
            continue
        for size in _BY_LENGTH:
            if len(word) > size + 1:
                ending = _ENDING_OF.get(word[-size:])
                if ending is not None:
                    found[ending[0]] += ending[1]
                    break
    for letter, language in _LETTERS.items():
        found[language] += _LETTER_WEIGHT * min(sample.count(letter), _LETTER_CAP)
    return found


def decide(found: dict[str, float]) -> str:
    """The language :func:`scores` point to, or ``""`` when the evidence is too weak or
    too close between two languages."""
    ranked = sorted(found.items(), key=lambda kv: -kv[1])
    (best, top), (_, second) = ranked[0], ranked[1]
    if top < MIN_EVIDENCE or top - second < MIN_LEAD * top:
        return ""
    return best


def detect(text: str) -> str:
    """The language of ``text`` (``de``, ``en``, ``fr``, ``it``) or ``""`` when unknown."""
    return decide(scores(text))


def detect_all(texts: list[str]) -> list[str]:
    """The language of each of ``texts`` (pieces of one document): a piece too short to
    tell takes the language of the whole document, when that is clear."""
    found = [scores(t) for t in texts]
    languages = [decide(f) for f in found]
    if all(languages):
        return languages
    whole = decide({lang: sum(f[lang] for f in found) for lang in LANGUAGES})
    return [language or whole for language in languages]
