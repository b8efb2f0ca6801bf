"""Fixtures of the media toolbox's tests: images with text drawn in them."""

from __future__ import annotations

import io

USER = "ada"


def png_with_text(*lines: str) -> bytes:
    """A white PNG with ``lines`` written large in black (legible to OCR)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=36)
    image = Image.new("RGB", (1000, 80 + 70 * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    for n, line in enumerate(lines):
        draw.text((20, 30 + 70 * n), line, fill="black", font=font)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def ocr_text(content: bytes) -> str:
    """What Tesseract reads in an image (the test's own check of what a model was sent)."""
    import subprocess

    done = subprocess.run(
        ["tesseract", "stdin", "stdout", "-l", "eng"],
        input=content,
        capture_output=True,
        timeout=60,
        check=True,
    )
    return done.stdout.decode()
