"""Images in a model call pass the neutralization gate too: their text is read by OCR and
checked like any other text.

An image part's text is read by Tesseract (the ``tesseract`` program with the languages its
distribution package installed — no model is downloaded at run time; ``NYLA_OCR_LANGS``,
default ``eng``, picks them). The neutralizers run over that text; the words of every finding
are blacked out in the image, which is sent as a new PNG. An image that cannot be checked —
given by URL (the server would have to fetch it), not decodable, too large, or no OCR engine
installed — is a gate failure: where the run requires neutralization the call is blocked,
otherwise it is logged and the image passes as it was.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nyla.config import config_value
from nyla.models.ai import ImagePart
from nyla.models.neutralize import Finding

#: seconds OCR of one image may take
OCR_TIMEOUT_S = 30.0
#: bytes of one image the gate reads at most (larger ones cannot be checked)
MAX_IMAGE_BYTES = 20_000_000
#: pixels of padding around a blacked-out word
PAD = 2


class ImageUncheckedError(Exception):
    """The image's text cannot be read."""


@dataclass(frozen=True)
class Word:
    """A word OCR found: its box in pixels and its span in the text it was joined into."""

    left: int
    top: int
    width: int
    height: int
    start: int
    end: int


def ocr_words(content: bytes, langs: str) -> tuple[str, list[Word]]:
    """The text Tesseract reads in ``content`` (lines joined by newlines, words by spaces)
    and where each word is; :class:`ImageUncheckedError` when it cannot."""
    program = shutil.which("tesseract")
    if program is None:
        raise ImageUncheckedError("no OCR engine is installed (the tesseract program)")
    try:
        done = subprocess.run(
            [program, "stdin", "stdout", "-l", langs, "tsv"],
            input=content,
            capture_output=True,
            timeout=OCR_TIMEOUT_S,
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ImageUncheckedError(f"OCR took longer than {OCR_TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise ImageUncheckedError(f"OCR failed: {lines[-1] if lines else done.returncode}")
    return _join_words(done.stdout.decode(errors="replace"))


def _join_words(tsv: str) -> tuple[str, list[Word]]:
    parts: list[str] = []
    words: list[Word] = []
    line_key: tuple[str, ...] | None = None
    pos = 0
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
            continue
        key = tuple(cells[1:5])
        if parts:
            parts.append("\n" if key != line_key else " ")
            pos += 1
        line_key = key
        text = cells[11].strip()
        left, top, width, height = (int(c) for c in cells[6:10])
        words.append(Word(left, top, width, height, pos, pos + len(text)))
        parts.append(text)
        pos += len(text)
    return "".join(parts), words


def black_out(content: bytes, boxes: Sequence[Word]) -> bytes:
    """``content`` as a PNG with ``boxes`` painted black."""
    from PIL import Image, ImageDraw

    with Image.open(io.BytesIO(content)) as opened:
        image = opened.convert("RGB")
    draw = ImageDraw.Draw(image)
    for b in boxes:
        draw.rectangle(
            (b.left - PAD, b.top - PAD, b.left + b.width + PAD, b.top + b.height + PAD),
            fill="black",
        )
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def neutralize_image(
    part: ImagePart,
    find: Callable[[str], list[Finding]],
    fail: Callable[[str], None],
) -> ImagePart:
    """``part`` with the words of every finding in its text blacked out (``part`` itself when
    there are none). ``find`` is the gate's findings, ``fail`` its failure (raises where
    neutralization is required)."""
    data = part.data_base64
    if data is None and part.url and part.url.startswith("data:") and ";base64," in part.url:
        data = part.url.split(";base64,", 1)[1]  # a data URL carries the image itself
    if data is None:
        fail("an image given by URL cannot be checked for personal data (send its data)")
        return part
    try:
        content = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        fail("an image's data is not base64 and cannot be checked for personal data")
        return part
    if len(content) > MAX_IMAGE_BYTES:
        fail(f"an image of {len(content)} bytes is too large to check for personal data")
        return part
    try:
        text, words = ocr_words(content, config_value("NYLA_OCR_LANGS", "eng") or "eng")
        spans = [(f.start, f.end) for f in find(text)]
        hit = [w for w in words if any(w.start < end and start < w.end for start, end in spans)]
        redacted = black_out(content, hit) if hit else None
    except (ImageUncheckedError, OSError, ValueError) as exc:
        fail(f"an image cannot be checked for personal data: {exc}")
        return part
    if redacted is None:
        return part
    return ImagePart(data_base64=base64.b64encode(redacted).decode(), mime_type="image/png")
