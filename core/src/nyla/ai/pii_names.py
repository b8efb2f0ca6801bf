"""Names of people for the default neutralizer, found through their context: after a title
(``Frau Meier``, ``Mr Smith``, ``Signora Rossi``), after a role or a label (``Sachbearbeiterin
ist Anna Meier-Schnyder``, ``Applicant: Maria Rossi``, ``prepared by Nina Petersen``), after a
greeting (``Liebe Anna,``, ``Dear Sarah,``) and under a closing formula (``Freundliche
Grüsse\\nAnna Meier``). German, English, French and Italian.

German capitalises every noun, so a capitalised word after a role is not yet a name: where
the cue is weak (a role word followed directly by capitalised words) two words are needed,
and words that start departments, teams and companies rather than names are refused
(:data:`NOT_NAMES`). Only the name is replaced (``Herr [NAME_1]``).
"""

from __future__ import annotations

import functools
import re
import re._parser as sre_parse  # type: ignore[import-not-found]
from collections.abc import Iterator
from typing import Any

from nyla.ai.pii_clues import CluedScan
from nyla.ai.pii_shapes import BEFORE, MORE_TITLES, NAME, SP, TITLE
from nyla.linear_regex import LinearPattern, Scan, compile_linear
from nyla.models.neutralize import Finding

#: roles and labels a name follows (German forms with and without the feminine ending)
_ROLES_DE = (
    r"Sachbearbeiter(?:in)?|Kundenberater(?:in)?|Berater(?:in)?|Ansprechpartner(?:in)?|"
    r"Ansprechperson|Kontaktperson|Kontakt|Mandant(?:in)?|Klient(?:in)?|Antragsteller(?:in)?|"
    r"Gesuchsteller(?:in)?|Vermieter(?:in)?|Mieter(?:in)?|Geschäftsführer(?:in)?|Inhaber(?:in)?|"
    r"Buchhalter(?:in)?|Projektleiter(?:in)?|Teamleiter(?:in)?|Leiter(?:in)?|Bevollmächtigte[rn]?|"
    r"Erblasser(?:in)?|Erbe|Erbin|Ehefrau|Ehemann|Ehepartner(?:in)?|Lebenspartner(?:in)?|Sohn|"
    r"Tochter|Vater|Mutter|Bruder|Schwester|Schuldner(?:in)?|Gläubiger(?:in)?|Zeuge|Zeugin|"
    r"Versicherte[rn]?|Versicherungsnehmer(?:in)?|Steuerpflichtige[rn]?|Lernende[rn]?|"
    r"Praktikant(?:in)?|Verwaltungsratspräsident(?:in)?|Präsident(?:in)?|Treuhänder(?:in)?|"
    r"Empfänger(?:in)?|Absender(?:in)?|Vormund(?:in)?|Revisor(?:in)?|Verkäufer(?:in)?|"
    r"Käufer(?:in)?|Arbeitnehmer(?:in)?|Arbeitgeber(?:in)?|Mitarbeiter(?:in)?|Patient(?:in)?|"
    r"Kunde|Kundin|Kontoinhaber(?:in)?|Inhaber(?:in)?|Unterzeichner(?:in)?|Vertreter(?:in)?|"
    r"Anwalt|Anwältin|Arzt|Ärztin|Name|Vorname|Nachname|Familienname|Vor- und Nachname|"
    r"Unterschrift|Verfasser(?:in)?|Autor(?:in)?"
)
_ROLES_EN = (
    r"[Cc]ontact(?: person)?|[Aa]pplicant|[Aa]ccount manager|[Mm]anager|[Cc]ase (?:handler|"
    r"worker|officer)|[Cc]lient|[Cc]ustomer|[Tt]enant|[Ll]andlord|[Ee]mployee|[Pp]olicyholder|"
    r"[Bb]eneficiary|[Ss]pouse|[Ww]ife|[Hh]usband|[Ss]on|[Dd]aughter|[Gg]uarantor|[Ww]itness|"
    r"[Bb]orrower|[Ll]ender|[Pp]atient|[Dd]irector|CEO|CFO|[Rr]ecipient|[Ss]ender|[Oo]wner|"
    r"[Rr]epresentative|[Ss]ignatory|[Aa]ttorney|[Cc]onsultant|[Aa]dvis[eo]r|[Cc]laimant|"
    r"[Aa]ccount holder|[Ff]ull name|[Ff]irst name|[Ll]ast name|[Ss]urname|[Nn]ame|"
    r"[Aa]ttention|Attn\.?|[Ss]igned|[Aa]uthor"
)
_ROLES_FR_IT = (
    r"[Cc]onseill(?:er|ère)|[Pp]ersonne de contact|[Dd]emandeu(?:r|se)|[Ll]ocataire|"
    r"[Bb]ailleur|[Cc]lient(?:e)?|[Tt]itulaire|[Nn]om et prénom|[Nn]om|[Pp]rénom|"
    r"[Ii]nterlocut(?:eur|rice)|[Ee]mployée?|[Rr]ichiedente|[Pp]ersona di contatto|"
    r"[Nn]ome e cognome|[Nn]ome|[Cc]ognome|[Cc]onsulente|[Ii]nquilino|[Ll]ocatore|"
    r"[Dd]ipendente|[Cc]liente"
)
#: "by" and "for" phrases a name follows
_BY = (
    r"[Ee]rstellt von|[Gg]eprüft von|[Uu]nterzeichnet von|[Bb]earbeitet von|[Vv]erfasst von|"
    r"[Ii]m Auftrag von|[Zz]uhanden von|[Zz]u Handen von|[Zz]\. ?H\.|c/o|[Pp]repared by|"
    r"[Aa]pproved by|[Ss]igned by|[Hh]andled by|[Rr]eviewed by|[Aa]ssigned to|[Oo]n behalf of|"
    r"[Ff]orward(?:ed)? to|[Ww]ritten by|[Pp]réparé par|[Ss]igné par|[Aa]u nom de|"
    r"[Pp]er conto di|[Ff]irmato da|[Pp]reparato da"
)
_VERBS = (
    r"ist|is|est|è|sind|heisst|heißt|named|called|namens|war|was|wurde|wird|bleibt|remains|"
    r"lautet"
)
#: what stands between a role and its name: a colon or comma, a verb (``ist``), a few words
#: and then one of those (``Ansprechpartner für die Revision: ...``), or just a space
_LINK = (
    rf"(?:{SP}{{0,3}}[:,]{SP}{{0,3}}"
    rf"|(?:{SP}{{1,3}}[\pL.'’-]+){{0,3}}?(?:{SP}{{0,3}}:|{SP}{{1,3}}(?:{_VERBS})){SP}{{1,3}}"
    rf"|{SP}{{1,3}}\(?{SP}{{0,2}})"
)
_ROLE_NAME = compile_linear(
    "pii.name_role",
    rf"{BEFORE}(?P<role>{_ROLES_DE}|{_ROLES_EN}|{_ROLES_FR_IT}|{_BY})(?P<link>{_LINK})"
    rf"(?:(?P<title>{TITLE}){SP}{{1,3}}{MORE_TITLES})?(?P<v>{NAME})",
)
_TITLED_NAME = compile_linear(
    "pii.name_titled",
    rf"{BEFORE}{TITLE}{SP}{{1,3}}{MORE_TITLES}(?P<v>{NAME})",
)
_GREETINGS = (
    r"Liebe|Lieber|Liebes|Hallo|Hoi|Salü|Sali|Servus|Grüezi|Guten Tag|Guten Morgen|Dear|Hi|"
    r"Hello|Hey|Good morning|Good afternoon|Thanks|Thank you|Cher|Chère|Bonjour|Salut|Caro|"
    r"Cara|Ciao|Buongiorno|Gentile|Egregio|Gentilissim[ao]"
)
# a first name alone after a greeting counts where the greeting line goes on with a comma,
# an exclamation mark or a line break
_GREETING_NAME = compile_linear(
    "pii.name_greeting",
    rf"{BEFORE}(?:{_GREETINGS}){SP}{{1,3}}(?P<v>{NAME}){SP}{{0,3}}(?:,|!|\n|$)",
)
#: what follows a name before its date of birth
_BIRTH_CUES = rf"geb\.|geboren|born|né|née|nato|nata|\*{SP}?[0-9]"
# a name right before its date of birth: "Anna Meier, geb. 1.4.1955", "Sandra Huber (*18.10.1979)"
_NAME_BEFORE_BIRTH = compile_linear(
    "pii.name_before_birth",
    rf"{BEFORE}(?P<v>{NAME}){SP}{{0,3}}(?:,{SP}{{0,3}}|\({SP}{{0,2}})(?:{_BIRTH_CUES})",
)
_CLOSINGS = (
    r"(?:Freundliche|Beste|Liebe|Herzliche|Viele|Schöne|Sonnige|Mit freundlichen|Mit besten|"
    r"Mit herzlichen|Mit lieben|Freundlichen)[ \t]+Gr(?:ü|ue)(?:ss|ß)e?n?|Gr(?:ü|ue|u)(?:ss|ß)e?|"
    r"MfG|LG|Best regards|Kind regards|Warm regards|Warmest regards|Regards|Best wishes|"
    r"Yours sincerely|Yours faithfully|Sincerely|Many thanks|Thanks|Thank you|Cheers|Best|"
    r"Cordialement|Meilleures salutations|Salutations distinguées|Bien à vous|"
    r"Avec mes meilleures salutations|Bien cordialement|Cordiali saluti|Distinti saluti|"
    r"Saluti|Un caro saluto|Tanti saluti"
)
# the name is the next line, or the rest of the closing line after a comma
_SIGNATURE = compile_linear(
    "pii.name_signature",
    rf"{BEFORE}(?:{_CLOSINGS}){SP}{{0,3}}(?:,?{SP}{{0,3}}(?:\r?\n{SP}{{0,3}}){{1,3}}|,{SP}{{1,3}})"
    rf"(?:{TITLE}{SP}{{1,3}}{MORE_TITLES})?(?P<v>{NAME}){SP}{{0,3}}(?:$|\r?\n|,|\||\()",
)

#: first words of what follows a role or a greeting that is not a person: departments,
#: teams, companies, pronouns and articles, forms of address to many
_NOT_NAMES = """
    Abteilung Team Teams Bereich Firma Gruppe Filiale Geschäftsstelle Finanzen Steuern
    Buchhaltung Lohn Personal Support Service Services Kundendienst Verwaltung Geschäftsleitung
    Verwaltungsrat Revision Revisionsstelle Direktion Sekretariat Empfang Zentrale Kanzlei
    Praxis Bank Banca Versicherung Gemeinde Gemeindeverwaltung Kanton Stadt Amt Steueramt
    Private Banking Wealth Management Sales Finance Accounting Accounts Payable Receivable
    Operations Marketing Legal Compliance Einkauf Verkauf Logistik Customer Customers Client
    Clients Success Department Office Board Committee Management Payroll Treuhand Fiduciaire
    Der Die Das Den Dem Des Ein Eine Einer Ihr Ihre Ihren Ihrem Ihres Unser Unsere Unseren
    Sie Er Es Wir Man Mein Meine Dein Deine Euer Eure Bitte Danke Vielen Herzlichen The A An
    This That These Those Our Your Their His Her My We You They It Please Thanks Thank All
    Everyone Everybody Team Colleagues Colleague Sir Madam Madame Sirs Friends Folks Valued
    Kolleginnen Kollegen Damen Herren Kunde Kundin Kunden Mitglieder Partner Partnerin
    Le La Les Un Une Votre Vos Notre Nos Il Lo Gli Una Vostro Vostra Nostro Nostra Signore
    Signori Gentili Monsieur Mesdames Messieurs Zürich Bern Basel Genf Genève Lausanne
    Luzern Montag Dienstag Mittwoch Donnerstag Freitag Samstag Sonntag Monday Tuesday
    Wednesday Thursday Friday Saturday Sunday Januar Februar März April Mai Juni Juli August
    September Oktober November Dezember January February March May June July October
    December Heute Morgen Today Tomorrow Frau Herr Herrn Mr Mrs Ms Dr Prof World Leiter
    Leiterin Head Grüsse Grüße Gruss Gruß Signor Signora Signorina Mme Mlle Miss Mx Sig
    Dott Avv Ing Lebenslauf Curriculum Vitae
"""
NOT_NAMES = frozenset(_NOT_NAMES.split())
#: words after the name-words that name an organisation, not a person
_COMPANY_WORDS = """
    AG GmbH SA Sàrl Sarl SAGL Sagl Ltd Ltd. Inc Inc. LLC KG OHG Co Co. Corp GmbH. AG. SA.
    Team Group Gruppe Holding Treuhand Fiduciaire Services Service Support Solutions Bank
    Banca Versicherung Versicherungen Partners Consulting Finance Finanzen Payable Immobilien
    Genossenschaft Stiftung Verein Verband Association Foundation Club Institut Institute
    University Universität Hospital Spital Klinik Resources Operations Relations Treasury
    Department Division Desk Office Unit Dienst Dienste Abteilung Controlling Accounting
    Compliance Legal Marketing Sales Procurement Logistics Logistik Einkauf
"""
COMPANY_WORDS = frozenset(_COMPANY_WORDS.split())


# Python's re on one word at a time (bounded input): a word that is itself a role or
# function (Präsidentin, Manager) makes the words around it a title, not a name
_ROLE_WORD = re.compile(
    rf"(?:{_ROLES_DE}|{_ROLES_EN}|{_ROLES_FR_IT}|Manager(?:in)?|Direktor(?:in)?)"
)


def _words(value: str) -> list[str]:
    return value.replace("\t", " ").split()


def _is_person(value: str, *, single_ok: bool) -> bool:
    """Whether the capitalised words ``value`` look like a person's name."""
    words = _words(value)
    if not words or words[0].rstrip(".") in NOT_NAMES or words[0].split("-")[0] in NOT_NAMES:
        return False
    if any(w in COMPANY_WORDS or w.split("-")[-1] in COMPANY_WORDS for w in words):
        return False
    if any(_ROLE_WORD.fullmatch(w) for w in words):
        return False
    capitalised = [w for w in words if w[:1].isupper()]
    if len(capitalised) < (1 if single_ok else 2):
        return False
    return not all(w.endswith(".") and len(w) == 2 for w in capitalised)  # initials only


def _trimmed(value: str) -> str:
    """``value`` without trailing words that are not part of the name (``Anna Meier Zürich``
    stays: over-covering a name is harmless; ``Anna Meier AG`` is refused earlier)."""
    return value.rstrip(" \t,.'’-")


def _role_single_ok(match: list[tuple[int, int]], text: str, pattern: LinearPattern) -> bool:
    """A single word after a role counts after a colon (``Nachname: Meier``) or a title
    (``Ansprechpartner Herr Bühler``); after a verb or a space a single capitalised word is
    as likely a noun (``Der Antragsteller ist Eigentümer``)."""
    if match[pattern.group("title")][0] >= 0:
        return True
    a, b = match[pattern.group("link")]
    return text[a:b].rstrip().endswith(":")


#: the alternatives a match of a pattern above holds right after a consumed boundary
#: (``BEFORE``, or for a birth cue the ``,``, space or ``(`` before it): its role, label or
#: "by" phrase, title, greeting or closing formula, or the birth cue after the name
_CUE_SOURCES = (_ROLES_DE, _ROLES_EN, _ROLES_FR_IT, _BY, TITLE, _GREETINGS, _CLOSINGS, _BIRTH_CUES)


def literal_prefixes(source: str) -> set[str]:
    """Strings one of which every match of the alternatives in ``source`` begins with, up to
    the case of their letters: each alternative's leading literal characters (a class of one
    letter in its two cases counts as the letter), cut where anything else comes."""
    return _prefixes(sre_parse.parse(source))


def _prefixes(items: Any) -> set[str]:
    out = {""}
    for op, arg in items:
        kind = str(op)
        if kind == "LITERAL":
            out = {p + chr(arg) for p in out}
        elif (
            kind == "IN"
            and all(str(k) == "LITERAL" for k, _ in arg)
            and len({chr(v).casefold() for _, v in arg}) == 1
        ):
            out = {p + chr(arg[0][1]) for p in out}
        elif kind == "BRANCH":
            return {p + q for p in out for branch in arg[1] for q in _prefixes(branch)}
        elif kind == "SUBPATTERN":
            return {p + q for p in out for q in _prefixes(arg[-1])}
        else:
            break
    return out


@functools.cache
def _cues() -> LinearPattern:
    """Where any pattern above may begin: one of the cues after a boundary, the cue in any case
    (RE2's case-insensitive match of a literal accepts whatever its exact match does). The
    boundary is matched case-sensitively, as the patterns match it: under case folding RE2
    widens a class to the letters' whole folding orbits, so the negated class would lose
    characters such as U+0345, which folds to a Greek letter but is none."""
    prefixes = sorted({p for source in _CUE_SOURCES for p in literal_prefixes(source)})
    return compile_linear("pii.name_cues", rf"{BEFORE}(?i:{'|'.join(map(re.escape, prefixes))})")


def may_hold_name(scan: CluedScan) -> bool:
    """False only where no pattern above can match: every name begins with a capital
    (``\\p{Lu}``, :mod:`nyla.ai.pii_clues`), and every match holds one of its cues (a role,
    label, title, greeting, closing or birth cue) right after a boundary. JSON keys in
    camelCase (``toolName``) hold capitals but no cue: the five patterns are not run there."""
    return scan.may_have_upper and _cues().search_spans(scan.data, 0) is not None


def name_findings(scan: Scan) -> Iterator[Finding]:
    """Names after titles, roles, labels and greetings, and under closing formulas."""
    text = scan.text
    for pattern in (_ROLE_NAME, _TITLED_NAME, _GREETING_NAME, _SIGNATURE, _NAME_BEFORE_BIRTH):
        group = pattern.group("v")
        for match in scan.matches(pattern, group):
            start, end = match[group]
            value = _trimmed(text[start:end])
            if pattern is _ROLE_NAME:
                single_ok = _role_single_ok(match, text, pattern)
            else:
                single_ok = pattern is not _NAME_BEFORE_BIRTH
            if value and _is_person(value, single_ok=single_ok):
                yield Finding(start=start, end=start + len(value), category="NAME", value=value)
