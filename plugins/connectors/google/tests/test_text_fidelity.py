"""Mail text as a person reads it (issue 28, fault 6): every MIME part decoded by the charset
it declares, HTML-only mails turned into text. Payloads are shaped as the Gmail API's
``users.messages`` resource documents them (developers.google.com/gmail/api/reference/rest/v1/users.messages#MessagePart)."""

from __future__ import annotations

import base64
from typing import Any

from nyla_connector_google import items


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def part(mime: str, data: bytes, charset: str | None = None) -> dict[str, Any]:
    content_type = f"{mime}; charset={charset}" if charset else mime
    return {
        "partId": "0",
        "mimeType": mime,
        "filename": "",
        "headers": [
            {"name": "Content-Type", "value": content_type},
            {"name": "Content-Transfer-Encoding", "value": "quoted-printable"},
        ],
        "body": {"size": len(data), "data": b64(data)},
    }


def message(*parts: dict[str, Any], mime: str = "multipart/alternative") -> dict[str, Any]:
    return {
        "id": "18c2a1b3d4e5f607",
        "threadId": "18c2a1b3d4e5f607",
        "labelIds": ["INBOX"],
        "payload": {
            "partId": "",
            "mimeType": mime,
            "filename": "",
            "headers": [],
            "parts": list(parts),
        },
    }


def test_a_latin_1_body_is_decoded_by_its_declared_charset():
    text = "Grüsse aus Zürich, à bientôt – Ihr Team"
    raw = message(part("text/plain", text.encode("cp1252"), "ISO-8859-1"))
    assert items.text_body(raw) == (text, "text")


def test_other_declared_charsets_and_a_wrong_declaration():
    for charset in ("iso-8859-15", "windows-1252", "utf-8", "UTF-8", '"koi8-r"'):
        sample = "Приветствие" if "koi8" in charset else "Öffnungszeiten: 9-17 Uhr, 5 €"
        encoding = charset.strip('"').lower()
        raw = message(part("text/plain", sample.encode(encoding), charset))
        assert items.text_body(raw)[0] == sample, charset
    # declared as us-ascii but really UTF-8: not mangled
    raw = message(part("text/plain", "Müller".encode(), "us-ascii"))
    assert items.text_body(raw)[0] == "Müller"
    raw = message(part("text/plain", "Müller".encode(), "x-unknown-charset"))
    assert items.text_body(raw)[0] == "Müller"


def test_an_html_only_mail_is_text_without_markup_or_css():
    html = (
        "<html><head><style>p { color: red; } .x { font-size: 12px }</style>"
        "<title>Newsletter</title></head><body><h1>Offsite 2027</h1>"
        "<p>Wir treffen uns in <b>Lugano</b> am 12.&nbsp;März.</p>"
        "<script>track()</script><table><tr><td>Tag</td><td>Ort</td></tr>"
        "<tr><td>Montag</td><td>Lugano</td></tr></table></body></html>"
    )
    raw = message(part("text/html", html.encode("iso-8859-1"), "iso-8859-1"), mime="text/html")
    body, kind = items.text_body(raw)
    assert kind == "text"
    assert "Wir treffen uns in Lugano am 12.\xa0März." in body
    for leaked in ("<", "color: red", "font-size", "track()"):
        assert leaked not in body, leaked
    assert "Montag | Lugano" in body


def test_plain_text_wins_over_html_in_an_alternative():
    raw = message(
        part("text/plain", b"Plain version", "utf-8"),
        part("text/html", b"<p>HTML version</p>", "utf-8"),
    )
    assert items.text_body(raw)[0] == "Plain version"
