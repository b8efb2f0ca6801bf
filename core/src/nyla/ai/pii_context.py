"""Detectors of the default neutralizer that need context: names in labelled fields or
after a title, postal addresses (Swiss, German, Austrian, French), dates of birth and
passport / ID numbers after their label. German, French and English labels.

Only the value is replaced (``Herr [NAME_1]``, ``geb. [DOB_1]``) so the text stays readable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from nyla.models.neutralize import Finding

_UP = r"[A-ZÄÖÜÀÂÇÉÈÊËÎÏÔÛÙŸ]"
_WORD = _UP + r"[\w'’-]*\w"
_PARTICLE = r"(?:von|van|de|der|du|di|da|dos|del|le|la|zu|ter|d')"
_NAME = rf"{_WORD}(?:[ \t]+(?:{_PARTICLE}[ \t]+)*{_WORD}){{0,3}}"

_LABELLED_NAME = re.compile(
    r"(?:\b(?:Name|Vorname|Nachname|Familienname|Kontaktperson|Ansprechpartner(?:in)?|"
    r"Kontakt|Contact(?: person)?|Full name|First name|Last name|Nom|Prénom|Interlocuteur|"
    r"Personne de contact|Patient(?:in)?|Mitarbeiter(?:in)?|Employee|Employé(?:e)?|"
    r"Kunde|Kundin|Client(?:e)?|Customer|Mieter(?:in)?|Tenant|Locataire)"
    r"[ \t]*:[ \t]*)(?P<v>" + _NAME + r")"
)
_TITLED_NAME = re.compile(
    r"(?:\b(?:Herrn?|Frau|Hr\.|Fr\.|Dr\.|Prof\.|Mr\.?|Mrs\.?|Ms\.?|Miss|Monsieur|Madame|"
    r"Mme\.?|Mlle\.?|Me|M\.)[ \t]+(?:(?:Dr\.|Prof\.|med\.|phil\.|iur\.)[ \t]+)*)"
    r"(?P<v>" + _NAME + r")"
)
_MONTHS = (
    r"(?:Januar|Jänner|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|"
    r"Dezember|janvier|février|mars|avril|mai|juin|juillet|août|septembre|octobre|novembre|"
    r"décembre|January|February|March|April|May|June|July|August|September|October|November|"
    r"December)"
)
_DATE = (
    r"(?:\d{1,2}[./-]\s?\d{1,2}[./-]\s?\d{2,4}|\d{4}-\d{2}-\d{2}|\d{1,2}\.?\s+"
    + _MONTHS
    + r"\s+\d{4}|"
    + _MONTHS
    + r"\s+\d{1,2},?\s+\d{4})"
)
_DOB = re.compile(
    r"(?:\b(?:geb\.|geboren(?:\s+am)?|Geburtsdatum|Geb\.-Datum|Geburtstag|DOB|D\.O\.B\.|"
    r"[Dd]ate of birth|[Bb]orn(?:\s+on)?|née?\s+le|[Dd]ate de naissance)\s*:?\s*)"
    r"(?P<v>" + _DATE + r")",
    re.IGNORECASE,
)
_ID_NUMBER = re.compile(
    r"(?:\b(?:Pass(?:nummer|-Nr\.?|nr\.?)?|Reisepass(?:nummer)?|[Pp]assport(?:\s+(?:No\.?|number))?|"
    r"Personalausweis(?:nummer)?|Ausweis(?:nummer|-Nr\.?)?|Identitätskarte|ID(?:-Nr\.?|"
    r"\s+(?:No\.?|number|card))|[Nn]uméro de passeport|[Pp]asseport|[Cc]arte d'identité)"
    r"\s*(?:[:#]|Nr\.?|No\.?|n°)?\s*)(?P<v>(?=[A-Z0-9]*\d)[A-Z0-9]{6,12})\b"
)
_STREET_WORDS = (
    r"(?:strasse|straße|str\.|gasse|weg|platz|allee|ring|rain|halde|matte|acker|steig|ufer|"
    r"damm|graben|hof|berg|quai|promenade)"
)
_STREET = (
    rf"(?:{_UP}[\w'’-]*{_STREET_WORDS}|(?:{_UP}[\w'’-]*[ \t])+(?:Strasse|Straße|Gasse|Weg|Platz|"
    rf"Allee))[ \t]+\d{{1,4}}[a-zA-Z]?"
    r"|(?:\d{1,4}(?:[ \t]?(?:bis|ter|[a-zA-Z]))?,?[ \t]+)?(?:[Rr]ue|[Aa]venue|av\.|[Cc]hemin|ch\.|"
    r"[Rr]oute|[Bb]oulevard|bd|[Pp]lace|[Qq]uai|[Ii]mpasse|[Aa]llée|[Rr]uelle)[ \t]+(?:(?:de|du|des|la|le|l'|d')[ \t]*)*"
    + _WORD
    + r"(?:[ \t-]"
    + _WORD
    + r")*(?:[ \t]+\d{1,4}[a-zA-Z]?)?"
    r"|\d{1,5}[A-Z]?[ \t]+(?:" + _WORD + r"[ \t]+){1,3}(?:Street|St\.|Road|Rd\.|Avenue|Ave\.|"
    r"Lane|Drive|Way|Square)"
)
_POSTBOX = r"(?:Postfach|Case postale|CP|P\.?\s?O\.? Box|Boîte postale|BP)[ \t]+\d{1,6}"
_TOWN = (
    r"(?:(?:CH|D|DE|A|AT|F|FR)-)?\d{4,5}[ \t]+" + _WORD + r"(?:[ \t]+(?:am|an|im|bei|sur|les|"
    r"en|de)?[ \t]*" + _WORD + r")?"
)
_ADDRESS = re.compile(
    rf"(?P<v>(?:{_STREET}|{_POSTBOX})(?:[ \t]*(?:,|\n)[ \t]*{_TOWN})?"
    rf"|(?:CH|D|DE|A|AT|F|FR)-\d{{4,5}}[ \t]+{_WORD})"
)
_LABELLED_TOWN = re.compile(
    r"(?:\b(?:Adresse|Address|Wohnort|Domicile|Anschrift|PLZ/Ort|NPA/Localité)[ \t]*:[ \t]*)"
    r"(?P<v>" + _TOWN + r")"
)

_DETECTORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_LABELLED_NAME, "NAME"),
    (_TITLED_NAME, "NAME"),
    (_DOB, "DOB"),
    (_ID_NUMBER, "IDNUMBER"),
    (_ADDRESS, "ADDRESS"),
    (_LABELLED_TOWN, "ADDRESS"),
)


def context_findings(text: str) -> Iterator[Finding]:
    """Names, addresses, dates of birth and ID numbers found through their context."""
    for pattern, category in _DETECTORS:
        for match in pattern.finditer(text):
            value = match.group("v").rstrip(" ,.")
            start = match.start("v")
            if value:
                yield Finding(start=start, end=start + len(value), category=category, value=value)
