"""File and folder names and mime types as the file store keeps them.

Names reach the store from uploads, connectors, e-mail attachments and tool arguments a model
wrote; mime types from whatever a client or a vendor's API declared. They are stored in
length-limited text columns and sent back in HTTP headers, so every write path passes them
through here: a name loses its control characters (a NUL cannot be stored, a line break
would end a header) and is refused when empty or too long; a mime type that is not a plain
``type/subtype`` is replaced by the one the name suggests. A stored name may still hold path
parts (a connector's ``reports/q3.txt``, an upload called ``../../etc/passwd``); a download
is offered under its base name only (:func:`download_name`), so no client writes it
anywhere but where the user saves it.
"""

from __future__ import annotations

import re

from nyla.text import clean_text

#: the longest file or folder name the store keeps (its column's width)
MAX_NAME_CHARS = 512

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
_MIME = re.compile(r"[A-Za-z0-9][\w.+-]{0,126}/[A-Za-z0-9][\w.+-]{0,126}(;[ -~]*)?")
_MAX_MIME_CHARS = 255


def clean_name(name: str, kind: str = "file") -> str:
    """``name`` as stored: control characters as one space, lone surrogates as U+FFFD,
    surrounding blanks stripped. ``ValueError`` when nothing is left or it is longer than
    :data:`MAX_NAME_CHARS`."""
    if not isinstance(name, str):
        raise ValueError(f"a {kind} name must be text, not {type(name).__name__}")
    cleaned = clean_text(_CONTROL.sub(" ", name)).strip()
    if not cleaned:
        raise ValueError(f"a {kind} needs a name")
    if len(cleaned) > MAX_NAME_CHARS:
        raise ValueError(
            f"a {kind} name is at most {MAX_NAME_CHARS} characters (this one has {len(cleaned)})"
        )
    return cleaned


def download_name(name: str, fallback: str = "download") -> str:
    """The name a download is offered under: the last part of ``name`` after any ``/`` or
    ``\\`` (both separators: a Windows client honours the backslash), cleaned of control
    characters and surrounding blanks; ``fallback`` when nothing usable is left (an empty
    name, ``..``, a name that ends in a separator)."""
    text = _CONTROL.sub(" ", clean_text(name if isinstance(name, str) else ""))
    base = re.split(r"[/\\]", text)[-1].strip()
    if not base or set(base) <= {"."}:
        return fallback
    return base[:MAX_NAME_CHARS]


def clean_mime(mime_type: str | None) -> str | None:
    """``mime_type`` when it is a plain ``type/subtype`` (with parameters) that fits its
    column; ``None`` (guess it from the name) otherwise."""
    if not mime_type or len(mime_type) > _MAX_MIME_CHARS:
        return None
    mime_type = mime_type.strip()
    return mime_type if _MIME.fullmatch(mime_type) else None
