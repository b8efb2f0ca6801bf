"""Images a rendered document embeds: ``file:<id>`` sources read from the user's files
before rendering (the renderers themselves never read anything)."""

from __future__ import annotations

from dataclasses import dataclass

#: the image types every renderer embeds
IMAGE_TYPES = {b"\x89PNG\r\n\x1a\n": "image/png", b"\xff\xd8\xff": "image/jpeg"}


@dataclass
class Image:
    """Bytes of one image and its type."""

    mime_type: str
    content: bytes


Images = dict[str, Image]


def sniff(content: bytes) -> str | None:
    """``image/png`` or ``image/jpeg`` by the file's first bytes, else ``None``."""
    return next((m for magic, m in IMAGE_TYPES.items() if content.startswith(magic)), None)
