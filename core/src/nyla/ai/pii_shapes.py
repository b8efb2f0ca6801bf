"""Pattern pieces the context detectors share (RE2 syntax, see :mod:`nyla.linear_regex`):
word boundaries, capitalised words and names, dates.

RE2's ``\\w`` and ``\\b`` are ASCII only, so word characters are spelt out as Unicode classes,
and a word boundary is a consumed character (``BEFORE``) whose match the detectors skip by
reporting the ``v`` group only. Every repetition is bounded, so one match is bounded too.
"""

from __future__ import annotations

#: a word character (Python's ``\w``)
W = r"\pL\pN_"
#: start of text or a non-word character: a lookbehind ``(?<!\w)`` that is consumed
BEFORE = rf"(?:^|[^{W}])"
#: end of text or a non-word character: a lookahead ``(?!\w)`` that is consumed
AFTER = rf"(?:$|[^{W}])"
#: spaces or tabs, not newlines
SP = r"[ \t]"

#: one capitalised word of a name: Meier, Meier-Schnyder, O'Brien, Jean-Pierre, McKenzie
NAME_WORD = r"\p{Lu}[\pL'’]*(?:-\p{Lu}[\pL'’]*){0,2}"
#: an initial: "J." in "J. Smith", "M." in "Anna M. Keller"
INITIAL = r"\p{Lu}\."
#: lower-case particles inside a name: von Allmen, van der Berg, de la Cruz
PARTICLE = r"(?:von|van|de|der|den|du|di|da|dos|del|della|le|la|zu|ter|af|d'|dell')"
#: a name of one to four words (the first may be an initial)
NAME = (
    rf"(?:{NAME_WORD}|{INITIAL})"
    rf"(?:{SP}{{1,3}}(?:{PARTICLE}{SP}{{1,3}}){{0,2}}(?:{NAME_WORD}|{INITIAL})){{0,3}}"
)
#: titles before a name, in the languages the seeds use
TITLE = (
    r"(?:Herrn?|Frau|Hr\.|Fr\.|Dr\.|Prof\.|Professor(?:in)?|Mr\.?|Mrs\.?|Ms\.?|Miss|Mx\.?|"
    r"Monsieur|Madame|Mademoiselle|Mme\.?|Mlle\.?|Me|M\.|Signor[ae]?|Sig\.(?:ra)?|Sig\.na|"
    r"Dott\.(?:ssa)?|Avv\.|Ing\.)"
)
#: further titles after the first: "Herr Dr. med.", "Frau Prof."
MORE_TITLES = (
    rf"(?:(?:Dr\.|Prof\.|Professor|med\.|phil\.|iur\.|rer\.|nat\.|h\.c\.){SP}{{1,3}}){{0,4}}"
)

_MONTH_NAMES = (
    "Januar|Jänner|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|"
    "Dezember|January|February|March|May|June|July|October|December|janvier|février|mars|"
    "avril|juin|juillet|août|septembre|octobre|novembre|décembre|gennaio|febbraio|marzo|"
    "aprile|maggio|giugno|luglio|agosto|settembre|ottobre|dicembre"
)
_MONTH_SHORT = (
    "Jan|Feb|Mär|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Okt|Oct|Nov|Dez|Dec|janv|févr|avr|juil|déc|"
    "gen|feb|mag|giu|lug|ago|set|ott|dic"
)
#: a month by name, in full or abbreviated (de, en, fr, it); match case-insensitively
MONTH = rf"(?:{_MONTH_NAMES}|(?:{_MONTH_SHORT})\.?)"
_DAY = r"(?:[0-3]?[0-9])"
_YEAR4 = r"(?:1[89][0-9]{2}|20[0-9]{2})"
#: a calendar date: 14.03.1981, 14.3.81, 14/03/1981, 1981-03-14, 14. März 1981,
#: 1er avril 1975, 5th of November 1968, 12-Feb-1985, March 14, 1981 (and the American
#: 07/22/1990); match case-insensitively
DATE = (
    rf"(?:{_DAY}[./-]{SP}?{_DAY}[./-]{SP}?(?:{_YEAR4}|[0-9]{{2}})"
    rf"|{_YEAR4}[-/.][01][0-9][-/.][0-3][0-9]"
    rf"|{_DAY}(?:\.|er|st|nd|rd|th|°)?(?:{SP}{{1,3}}of)?(?:{SP}{{1,3}}|-){MONTH}(?:{SP}{{1,3}}|-){_YEAR4}"
    rf"|{MONTH}{SP}{{1,3}}{_DAY}(?:st|nd|rd|th)?,?{SP}{{1,3}}{_YEAR4})"
)
