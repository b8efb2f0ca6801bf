"""Produced PDFs keep text beyond Latin-1 (Greek, Cyrillic, typographic dashes and quotes)
when a DejaVu TTF is on the machine, and fall back to the built-in fonts with a warning when
none is."""

from __future__ import annotations

import logging

import pytest

from nyla_toolbox_documents.extract import extract
from nyla_toolbox_documents.extract_text import parse_markdown
from nyla_toolbox_documents.pdf_fonts import BUILTIN, load_fonts, pdf_fonts
from nyla_toolbox_documents.render import renderer
from nyla_toolbox_documents.style import Style

SOURCE = """# Zürich – Αθήνα – Москва

Ελληνικά και русский текст — „Anführungszeichen“ für 20 €.

| Город | Πόλη |
|---|---|
| Москва | Αθήνα |

```
λ = «mono»
```
"""


@pytest.mark.skipif(
    pdf_fonts()["sans"] == BUILTIN["sans"],
    reason="no DejaVu TTF on this machine (Debian's fonts-dejavu-core or matplotlib's copy)",
)
@pytest.mark.parametrize("font", ["Helvetica", "Times New Roman"])
def test_non_latin_text_survives_a_pdf_round_trip(font):
    source = parse_markdown(SOURCE)
    style = Style.model_validate({"fontFamily": font})
    back = extract("cities.pdf", renderer("pdf")(source, style, {})).udm
    assert [b.text for b in back.blocks() if b.type == "heading"] == ["Zürich – Αθήνα – Москва"]
    assert [(b.header, b.rows) for b in back.blocks() if b.type == "table"] == [
        (["Город", "Πόλη"], [["Москва", "Αθήνα"]])
    ]
    text = " ".join(b.text for b in back.blocks() if b.type in ("text", "code"))
    assert "Ελληνικά και русский текст — „Anführungszeichen“ für 20 €." in text
    assert "λ = «mono»" in text


def test_without_dejavu_the_builtin_fonts_are_used_with_a_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        fonts = load_fonts([tmp_path])
    assert fonts == BUILTIN
    assert "fonts-dejavu-core" in caplog.text and str(tmp_path) in caplog.text
