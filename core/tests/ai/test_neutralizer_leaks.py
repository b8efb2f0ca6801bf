"""The default neutralizer's leaks and false positive from the held-out campaign (issue 12),
and the context detectors: names, postal addresses, dates of birth, passport/ID numbers."""

from __future__ import annotations

import pytest

from nyla.ai.default_neutralizer import DefaultNeutralizer

FIND = DefaultNeutralizer().find


def found(text: str) -> set[tuple[str, str]]:
    return {(f.category, f.value) for f in FIND(text)}


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("IBAN ch16 0900 0000 8765 4321 bitte", "IBAN", "ch16 0900 0000 8765 4321"),
        ("an jürg.müller@bäckerei-müller.ch senden", "EMAIL", "jürg.müller@bäckerei-müller.ch"),
        ("Telefon (044) 268 19 77", "PHONE", "(044) 268 19 77"),
        ("Name: Hans Muster", "NAME", "Hans Muster"),
        ("Kontaktperson: Anna-Lena von Arx", "NAME", "Anna-Lena von Arx"),
        ("Sehr geehrter Herr Müller", "NAME", "Müller"),
        ("Dear Mrs. Smith,", "NAME", "Smith"),
        ("Madame Dupont a appelé", "NAME", "Dupont"),
        ("Bahnhofstrasse 12, 8001 Zürich", "ADDRESS", "Bahnhofstrasse 12, 8001 Zürich"),
        ("Postfach 1234\n3001 Bern", "ADDRESS", "Postfach 1234\n3001 Bern"),
        ("12 rue de la Paix, 75002 Paris", "ADDRESS", "12 rue de la Paix, 75002 Paris"),
        ("221B Baker Street", "ADDRESS", "221B Baker Street"),
        ("geb. 12.03.1985", "DOB", "12.03.1985"),
        ("Date of birth: 4 July 1976", "DOB", "4 July 1976"),
        ("née le 3 mars 1990", "DOB", "3 mars 1990"),
        ("Passnummer: X1234567", "IDNUMBER", "X1234567"),
        ("Passport No. C01X00T47", "IDNUMBER", "C01X00T47"),
    ],
)
def test_detected(text, category, value):
    assert (category, value) in found(text)


@pytest.mark.parametrize(
    "text",
    [
        "Release 2.10.0.1 is out",
        "upgrade to v2.10.0.1 today",
        "Die Rechnung 2024 ist bezahlt.",
        "Version 3.2 vom 12.03.2024",
        "Im Jahr 2025 Umsatz gestiegen",
        "Wir treffen uns am 12.03.2024 in Zürich",
    ],
)
def test_clean(text):
    assert found(text) == set()


def test_an_ip_address_is_still_found():
    assert ("IP", "10.0.0.1") in found("server 10.0.0.1 is down")
