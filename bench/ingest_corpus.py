"""A deterministic corpus of small German and English text files for bench/ingest.py.

    .venv/bin/python bench/ingest_corpus.py /tmp/corpus --files 10000

Each file is a short business note (300-2,000 bytes) made of varied sentences drawn from
templates with slots (people, cities, products, amounts, dates), about half German, half
English, one hundred files per folder. The same ``--seed`` gives byte-identical files.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

PEOPLE = ("Anna Keller", "Marco Rossi", "Lea Müller", "Jonas Weber", "Sophie Martin",
          "David Brunner", "Laura Schmid", "Noah Fischer", "Mia Baumann", "Luca Meier",
          "Elena Widmer", "Tim Gerber", "Sarah Zimmermann", "Felix Huber", "Nina Frei")  # fmt: skip
CITIES = ("Zürich", "Bern", "Basel", "Luzern", "St. Gallen", "Genf", "Lausanne", "Winterthur",
          "München", "Berlin", "Hamburg", "Wien", "Lugano", "Zug", "Chur")  # fmt: skip
PRODUCTS = ("the billing portal", "the mobile app", "the reporting module", "the CRM import",
            "the payroll export", "the customer newsletter", "the warehouse scanner",
            "the booking widget", "the invoice OCR", "the partner API")  # fmt: skip
PRODUKTE = ("das Abrechnungsportal", "die Mobile-App", "das Reporting-Modul", "den CRM-Import",
            "den Lohnexport", "den Kunden-Newsletter", "den Lagerscanner", "das Buchungs-Widget",
            "die Rechnungserkennung", "die Partner-Schnittstelle")  # fmt: skip
TOPICS_EN = ("budget", "hiring", "the audit", "the data migration", "the office move",
             "supplier contracts", "the security review", "customer churn", "pricing",
             "the quarterly close")  # fmt: skip
TOPICS_DE = ("das Budget", "die Rekrutierung", "die Revision", "die Datenmigration",
             "den Büroumzug", "die Lieferantenverträge", "die Sicherheitsprüfung",
             "die Kundenabwanderung", "die Preisgestaltung", "den Quartalsabschluss")  # fmt: skip
MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August",
             "September", "October", "November", "December")  # fmt: skip
MONATE = ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September",
          "Oktober", "November", "Dezember")  # fmt: skip

ENGLISH = (
    "{p} met {q} in {c} to discuss {t}.",
    "The team agreed that {prod} needs another round of testing before the release in {m}.",
    "{p} will send the revised offer for {prod} to the customer by {d} {m}.",
    "Revenue from {prod} grew by {n} percent compared with the previous quarter.",
    "We still wait for the signed contract; {q} follows up with legal next week.",
    "The steering committee approved a budget of CHF {a} for {t}.",
    "Open question: who owns {t} after {p} moves to the {c} office?",
    "Support tickets about {prod} dropped from {n} to {k} per week after the last fix.",
    "{p} reported that the supplier in {c} raised prices by {k} percent.",
    "Next steps: {q} drafts the plan for {t}, {p} reviews it before {d} {m}.",
    "The workshop in {c} is booked for {d} {m}; travel costs are covered by the project.",
    "Customers in {c} asked whether {prod} can export data as CSV and PDF.",
    "The migration of {prod} to the new servers took {n} hours, with no data lost.",
    "{p} suggested a short training session for new employees on {t}.",
    "The risk log lists {k} open items for {prod}, two of them rated high.",
)
GERMAN = (
    "{p} hat sich mit {q} in {c} getroffen, um {t} zu besprechen.",
    "Das Team ist sich einig, dass {prod} vor dem Release im {m} noch einmal getestet wird.",
    "{p} schickt dem Kunden die überarbeitete Offerte für {prod} bis zum {d}. {m}.",
    "Der Umsatz mit {prod} ist gegenüber dem Vorquartal um {n} Prozent gestiegen.",
    "Der unterschriebene Vertrag fehlt noch; {q} klärt das nächste Woche mit der Rechtsabteilung.",
    "Der Lenkungsausschuss hat für {t} ein Budget von CHF {a} bewilligt.",
    "Offene Frage: Wer übernimmt {t}, wenn {p} ins Büro in {c} wechselt?",
    "Die Supportanfragen zu {prod} sind nach dem letzten Fix von {n} auf {k} pro Woche gesunken.",
    "{p} berichtet, dass der Lieferant in {c} die Preise um {k} Prozent erhöht hat.",
    "Nächste Schritte: {q} entwirft den Plan für {t}, {p} prüft ihn vor dem {d}. {m}.",
    "Der Workshop in {c} ist für den {d}. {m} gebucht; die Reisekosten trägt das Projekt.",
    "Kunden in {c} fragen, ob {prod} Daten als CSV und PDF exportieren kann.",
    "Die Migration von {prod} auf die neuen Server dauerte {n} Stunden, ohne Datenverlust.",
    "{p} schlägt eine kurze Schulung für neue Mitarbeitende zu {t} vor.",
    "Im Risikoprotokoll stehen {k} offene Punkte zu {prod}, zwei davon mit hoher Priorität.",
)
TITLES_EN = ("Meeting notes", "Project update", "Status report", "Call summary", "Memo")
TITLES_DE = ("Sitzungsprotokoll", "Projektstand", "Statusbericht", "Gesprächsnotiz", "Aktennotiz")


def note(rng: random.Random, i: int) -> str:
    """One file's text: a title line, then sentences until its drawn size is reached."""
    german = rng.random() < 0.5
    templates, products, topics, months, titles = (
        (GERMAN, PRODUKTE, TOPICS_DE, MONATE, TITLES_DE)
        if german
        else (ENGLISH, PRODUCTS, TOPICS_EN, MONTHS_EN, TITLES_EN)
    )
    target = rng.randint(300, 1900)
    lines = [f"{rng.choice(titles)} {i} – {rng.choice(CITIES)}", ""]
    size = len(lines[0].encode())
    paragraph: list[str] = []
    while size < target:
        sentence = rng.choice(templates).format(
            p=rng.choice(PEOPLE), q=rng.choice(PEOPLE), c=rng.choice(CITIES),
            t=rng.choice(topics), prod=rng.choice(products), m=rng.choice(months),
            d=rng.randint(1, 28), n=rng.randint(2, 60), k=rng.randint(1, 19),
            a=f"{rng.randint(5, 900) * 1000:,}".replace(",", "'"),
        )  # fmt: skip
        paragraph.append(sentence)
        size += len(sentence.encode()) + 1
        if len(paragraph) >= rng.randint(3, 6):
            lines.append(" ".join(paragraph))
            lines.append("")
            paragraph = []
    if paragraph:
        lines.append(" ".join(paragraph))
    text = "\n".join(lines).rstrip() + "\n"
    return text.encode()[:2000].decode(errors="ignore")


def make_corpus(root: Path, files: int, seed: int = 30) -> int:
    """Write ``files`` notes below ``root`` (100 per folder); returns the bytes written."""
    rng = random.Random(seed)
    total = 0
    for i in range(files):
        folder = root / f"folder-{i // 100:03d}"
        if i % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        data = note(rng, i).encode()
        (folder / f"note-{i:05d}.txt").write_bytes(data)
        total += len(data)
    return total


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args()
    written = make_corpus(args.root, args.files, args.seed)
    print(f"{args.files} files, {written / 1e6:.1f} MB in {args.root}")
