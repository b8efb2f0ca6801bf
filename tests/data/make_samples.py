"""Generate the sample files the knowledge-store tests and the demo read.

    .venv/bin/python tests/data/make_samples.py

Writes sample.txt/.md/.html/.pdf/.docx/.csv/.json, a password-protected PDF (encrypted.pdf),
a file with personal data (personal.txt) and a corrupt PDF (broken.pdf) next to this script.
The files are committed; rerun this only to change them. The PDF is written by hand (a tiny
valid PDF with one text stream per page) so no PDF generator is needed; python-docx writes the
DOCX and pypdf encrypts the PDF.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

TXT = """Treuhand Muster AG – Jahresabschluss 2025

Der Jahresabschluss umfasst Bilanz, Erfolgsrechnung und Anhang. Die Buchhaltung wird
quartalsweise abgeschlossen; offene Debitoren werden monatlich gemahnt.

Die Mehrwertsteuer wird nach der effektiven Methode abgerechnet. Vorsteuern auf Investitionen
werden im Quartal der Zahlung geltend gemacht.

Lohnbuchhaltung: Die AHV-Beiträge werden monatlich überwiesen, die Pensionskasse quartalsweise.
"""

MD = """# Onboarding Guide

Welcome to the trustee team. This guide explains the tools we use.

## Accounting

We book every invoice within five working days. Receipts are scanned and attached.

### VAT

VAT returns are filed quarterly with the effective method.

## Payroll

Salaries are paid on the 25th of each month.

| Month | Payday |
|-------|--------|
| January | 25 |
| February | 25 |

```python
# this is a code comment, not a heading
print("hello")
```

## Holidays

Employees have 25 vacation days per year.
"""

HTML = """<!doctype html>
<html><head><title>Client portal help</title><style>body { color: red; }</style>
<script>var secret = "do not index";</script></head>
<body>
<h1>Client portal</h1>
<p>Upload your receipts as PDF or photo. The portal accepts files up to 25 MB.</p>
<h2>Invoices</h2>
<p>Open invoices are listed with their due date and amount.</p>
<table>
<tr><th>Invoice</th><th>Amount</th><th>Due</th></tr>
<tr><td>R-1001</td><td>1200.00</td><td>2025-03-31</td></tr>
<tr><td>R-1002</td><td>860.50</td><td>2025-04-15</td></tr>
</table>
<h2>Support</h2>
<p>Contact support through the ticket form; answers come within one business day.</p>
</body></html>
"""

PDF_PAGES = [
    [
        "Quarterly report Q1",
        "Revenue grew by twelve percent compared to the previous quarter.",
        "The main driver was the new payroll service for small companies.",
    ],
    [
        "Outlook",
        "For the second quarter we expect stable demand for tax advisory.",
        "Hiring two additional accountants is planned for May.",
    ],
]

CSV = """client_id,name,city,mandate_type,annual_fee
C-001,Bäckerei Huber,Zürich,bookkeeping,4800
C-002,Garage Meier,Bern,payroll,3600
C-003,Studio Keller,Basel,tax,2200
C-004,Weingut Rossi,Lugano,bookkeeping,5100
"""

JSON_DOC = {
    "company": {"name": "Treuhand Muster AG", "city": "Zürich", "founded": 1998},
    "services": ["bookkeeping", "payroll", "tax advisory", "auditing"],
    "contacts": [
        {"role": "partner", "name": "Anna Muster"},
        {"role": "support", "name": "Ben Beispiel"},
    ],
}

PERSONAL = """Kundendossier Peter Beispiel

E-Mail: peter.beispiel@example.ch, Telefon +41 44 123 45 67.
Lohnzahlung auf IBAN CH93 0076 2011 6238 5295 7.
Bitte die Steuererklärung bis Ende März einreichen.
"""


def _pdf_bytes(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF: Helvetica text, one content stream per page, a correct xref."""
    objects: list[bytes] = []
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    font_id = 3 + 2 * len(pages)
    for i, lines in enumerate(pages):
        content_id = 4 + 2 * i
        objects.append(
            (
                f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
                f"/Resources << /Font << /F1 {font_id} 0 R >> >> /Contents {content_id} 0 R >>"
            ).encode()
        )
        ops = ["BT", "/F1 12 Tf", "14 TL", "50 780 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({escaped}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(
            b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream"
        )
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


def _docx(path: Path) -> None:
    from docx import Document

    doc = Document()
    doc.core_properties.title = "Mandate agreement"
    doc.add_heading("Mandate agreement", level=1)
    doc.add_paragraph("This agreement covers bookkeeping and payroll for the client.")
    doc.add_heading("Scope of services", level=2)
    doc.add_paragraph("The trustee keeps the books and prepares the annual financial statements.")
    doc.add_heading("Fees", level=2)
    table = doc.add_table(rows=3, cols=2)
    for row, (service, fee) in zip(
        table.rows,
        [("Service", "Fee CHF"), ("Bookkeeping", "4800"), ("Payroll", "3600")],
        strict=True,
    ):
        row.cells[0].text, row.cells[1].text = service, fee
    doc.add_paragraph("Fees are invoiced quarterly in advance.")
    doc.save(path)


def _encrypted(plain: bytes, path: Path) -> None:
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(plain)).pages:
        writer.add_page(page)
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    with path.open("wb") as fh:
        writer.write(fh)


def main() -> None:
    """Write every sample file."""
    (HERE / "sample.txt").write_text(TXT, encoding="utf-8")
    (HERE / "sample.md").write_text(MD, encoding="utf-8")
    (HERE / "sample.html").write_text(HTML, encoding="utf-8")
    pdf = _pdf_bytes(PDF_PAGES)
    (HERE / "sample.pdf").write_bytes(pdf)
    _docx(HERE / "sample.docx")
    (HERE / "sample.csv").write_text(CSV, encoding="utf-8")
    (HERE / "sample.json").write_text(json.dumps(JSON_DOC, indent=2, ensure_ascii=False), "utf-8")
    (HERE / "personal.txt").write_text(PERSONAL, encoding="utf-8")
    _encrypted(pdf, HERE / "encrypted.pdf")
    (HERE / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")
    print(f"samples written to {HERE}")


if __name__ == "__main__":
    main()
