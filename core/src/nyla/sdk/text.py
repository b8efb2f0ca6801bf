"""Text helpers for connectors: bytes in a declared charset, HTML as the text a person
reads — the same extraction the knowledge store applies to HTML files, so a mail or a page
indexed through a connector reads the same as the file would — and messages with the
server's paths hidden (:func:`redact_paths`)."""

from __future__ import annotations

import codecs

from nyla.connections.redact import HIDDEN, redact_paths, sent_values, server_values

__all__ = [
    "HIDDEN",
    "charset_of",
    "decode_text",
    "html_to_text",
    "redact_paths",
    "sent_values",
    "server_values",
]


def decode_text(data: bytes, charset: str | None = None) -> str:
    """``data`` decoded by its declared ``charset`` (a MIME ``charset=`` value); an unknown or
    wrong declaration falls back to UTF-8, then Windows-1252, never failing."""
    for candidate in (_known(charset), "utf-8"):
        if candidate is None:
            continue
        try:
            return data.decode(candidate)
        except UnicodeDecodeError:
            continue
    return data.decode("cp1252", "replace")


def _known(charset: str | None) -> str | None:
    if not charset:
        return None
    name = charset.strip().strip("\"'").lower()
    # mail software labels Windows-1252 text as Latin-1 often enough that browsers and the
    # WHATWG encoding standard read "iso-8859-1" as windows-1252; so do we
    if name in ("iso-8859-1", "latin1", "latin-1"):
        name = "cp1252"
    if name in ("us-ascii", "ascii"):  # UTF-8 is its superset: 8-bit text mislabelled reads
        name = "utf-8"
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def charset_of(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a ``Content-Type`` value, if any."""
    for param in (content_type or "").split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'")
    return None


def html_to_text(html: str) -> str:
    """The readable text of an HTML document or fragment: scripts, styles and head dropped,
    headings, paragraphs and table rows on their own lines, entities resolved."""
    from nyla.knowledge.extract import extract

    document = extract("message.html", html.encode("utf-8"), "text/html")
    return "\n\n".join(obj.text for obj in document.objects).strip()
