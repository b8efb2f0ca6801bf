"""E-mail (``.eml``, the standard library's ``email``) and ZIP archives (``zipfile``) to the
UDM: the message body as blocks, each attachment or archive entry as an attachment block
whose bytes are kept for ``extractContainerItem``."""

from __future__ import annotations

import io
import mimetypes
import zipfile
from email import policy
from email.parser import BytesParser
from typing import Any

from nyla.sdk.documents import AttachmentBlock, Part, TextBlock, UdmDocument
from nyla_toolbox_documents.extract import MAX_ITEM_BYTES, DocumentError, Extracted, Item

#: entries of an archive listed at most, and the most bytes unpacked from one archive
MAX_ENTRIES = 2_000
MAX_UNPACKED_BYTES = 200 * 1024 * 1024
_HEADERS = ("From", "To", "Cc", "Date", "Subject")


def eml(content: bytes) -> Extracted:
    """A message: its headers as metadata and title, its body (plain text preferred, else
    the HTML part's blocks) and its attachments."""
    from nyla_toolbox_documents.extract_text import html

    message: Any = BytesParser(policy=policy.default).parsebytes(content)
    if not any(message.get(h) for h in _HEADERS):
        raise DocumentError("not an e-mail message: no From, To, Date or Subject header")
    doc = UdmDocument(kind="eml", title=str(message.get("Subject") or ""))
    doc.meta = {h.lower(): str(message.get(h)) for h in _HEADERS if message.get(h)}
    extracted = Extracted(doc)
    body = Part(kind="message", label="body")
    part = message.get_body(preferencelist=("plain", "html"))
    if part is not None:
        text = part.get_content()
        if part.get_content_type() == "text/html":
            body.children.extend(html(text.encode("utf-8")).udm.blocks())
        else:
            paragraphs = [" ".join(p.split()) for p in text.split("\n\n")]
            body.children.extend(TextBlock(text=p) for p in paragraphs if p)
    doc.children.append(body)
    for n, attachment in enumerate(message.iter_attachments(), start=1):
        name = attachment.get_filename() or f"attachment-{n}"
        data = attachment.get_payload(decode=True) or b""
        mime = attachment.get_content_type()
        src = ""
        if len(data) <= MAX_ITEM_BYTES:
            src = extracted.keep(f"attachment {n}", Item(name, mime, data))
        doc.children.append(AttachmentBlock(name=name, src=src, mime_type=mime, size=len(data)))
    return extracted


def zip_archive(content: bytes) -> Extracted:
    """An archive: one attachment block per file entry (folders, encrypted entries and
    entries past the size caps are listed without their bytes)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except zipfile.BadZipFile as exc:
        raise DocumentError(f"corrupt ZIP archive: {exc}") from exc
    doc = UdmDocument(kind="zip")
    extracted = Extracted(doc)
    unpacked = 0
    with archive:
        entries = [i for i in archive.infolist() if not i.is_dir()]
        if len(entries) > MAX_ENTRIES:
            doc.meta["cut"] = f"{len(entries)} entries, the first {MAX_ENTRIES} listed"
        for n, info in enumerate(entries[:MAX_ENTRIES], start=1):
            mime = mimetypes.guess_type(info.filename)[0] or "application/octet-stream"
            src = ""
            fits = info.file_size <= MAX_ITEM_BYTES and unpacked + info.file_size <= (
                MAX_UNPACKED_BYTES
            )
            if fits and not info.flag_bits & 0x1:
                data = _read_capped(archive, info)
                unpacked += len(data)
                src = extracted.keep(f"attachment {n}", Item(info.filename, mime, data))
            doc.children.append(
                AttachmentBlock(name=info.filename, src=src, mime_type=mime, size=info.file_size)
            )
    doc.meta["entries"] = str(len(entries))
    return extracted


def _read_capped(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The entry's bytes. ``zipfile`` stops at the size the header declares (checked against
    the caps before) and checks the CRC there, so an entry that would unpack past its declared
    size (a forged header, a bomb) is refused rather than read."""
    try:
        return archive.read(info)
    except zipfile.BadZipFile as exc:
        raise DocumentError(f"ZIP entry {info.filename} is damaged: {exc}") from exc
