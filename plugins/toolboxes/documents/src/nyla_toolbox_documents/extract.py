"""File bytes -> a UDM document and the embedded items kept beside it, per file kind.

No model call: each kind has its library (markdown-it-py, lxml, pdfplumber + pypdf,
python-docx, openpyxl, python-pptx, the standard library's ``email`` and ``zipfile``).
A file that cannot be read raises :class:`DocumentError` with a reason a user understands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath

from nyla.sdk.documents import UdmDocument

#: the largest file read, and the largest embedded item kept (a ZIP entry, an attachment)
MAX_FILE_BYTES = 50 * 1024 * 1024
MAX_ITEM_BYTES = 25 * 1024 * 1024

KINDS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".pptx": "pptx",
    ".eml": "eml",
    ".zip": "zip",
}

MIME_TYPES: dict[str, str] = {
    "markdown": "text/markdown",
    "html": "text/html",
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "eml": "message/rfc822",
    "zip": "application/zip",
}
_BY_MIME = {mime: kind for kind, mime in MIME_TYPES.items()}


class DocumentError(ValueError):
    """A document that cannot be read or written, with the reason."""


@dataclass
class Item:
    """Bytes an extractor kept beside the tree (an image, an attachment, a ZIP entry)."""

    name: str
    mime_type: str
    content: bytes


@dataclass
class Extracted:
    """What extraction yields: the tree and its items by ``src`` (``item:image 1``)."""

    udm: UdmDocument
    items: dict[str, Item] = field(default_factory=dict)

    def keep(self, ref: str, item: Item) -> str:
        """Keep ``item`` as ``item:<ref>`` and return that ``src``."""
        src = f"item:{ref}"
        self.items[src] = item
        return src


def detect_kind(name: str, mime_type: str | None = None) -> str | None:
    """The kind of a file by its mime type, else its extension; ``None``: unsupported."""
    if mime_type:
        kind = _BY_MIME.get(mime_type.split(";")[0].strip().lower())
        if kind:
            return kind
    return KINDS.get(PurePath(name).suffix.lower())


def extract(name: str, content: bytes, mime_type: str | None = None) -> Extracted:
    """The UDM of file ``name``; raises :class:`DocumentError` when it cannot be read."""
    kind = detect_kind(name, mime_type)
    if kind is None:
        raise DocumentError(
            f"unsupported file type: {name} ({mime_type or 'unknown'}); supported: "
            + ", ".join(sorted(set(KINDS.values())))
        )
    if len(content) > MAX_FILE_BYTES:
        raise DocumentError(f"{name} is larger than {MAX_FILE_BYTES // 2**20} MB")
    try:
        extracted = _extractor(kind)(content)
    except DocumentError:
        raise
    except Exception as exc:
        raise DocumentError(f"cannot read {kind} file {name}: {exc}") from exc
    extracted.udm.kind = kind
    if not extracted.udm.title:
        extracted.udm.title = next(
            (b.text for b in extracted.udm.blocks() if b.type == "heading"), PurePath(name).stem
        )
    return extracted


def _extractor(kind: str) -> Callable[[bytes], Extracted]:
    # each kind's library loads on first use
    if kind in ("markdown", "html"):
        from nyla_toolbox_documents import extract_text

        return extract_text.markdown if kind == "markdown" else extract_text.html
    if kind == "pdf":
        from nyla_toolbox_documents.extract_pdf import pdf

        return pdf
    if kind in ("docx", "xlsx", "pptx"):
        from nyla_toolbox_documents import extract_office

        return {
            "docx": extract_office.docx,
            "xlsx": extract_office.xlsx,
            "pptx": extract_office.pptx,
        }[kind]
    from nyla_toolbox_documents import extract_mail

    return extract_mail.eml if kind == "eml" else extract_mail.zip_archive


def decode(content: bytes) -> str:
    """Text of ``content``: UTF-8 (a BOM dropped), else Latin-1."""
    if content.startswith(b"\xef\xbb\xbf"):
        content = content[3:]
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return content.decode("latin-1")
