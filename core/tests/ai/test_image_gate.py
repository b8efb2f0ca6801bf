"""Images pass the neutralization gate: the text OCR reads in them is checked by the
neutralizers and the words of every finding are blacked out; an image that cannot be checked
blocks the call where neutralization is required and passes (logged) where it is not."""

from __future__ import annotations

import base64
import io
import shutil

import pytest

from nyla.ai.default_neutralizer import DefaultNeutralizer
from nyla.ai.image_gate import ocr_words
from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession
from nyla.errors import NeutralizationError
from nyla.models.ai import ImagePart, Message, Role, TextPart

needs_ocr = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract missing")


def _png(*lines: str) -> bytes:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=36)
    image = Image.new("RGB", (1000, 80 + 70 * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    for n, line in enumerate(lines):
        draw.text((20, 30 + 70 * n), line, fill="black", font=font)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _part(content: bytes) -> ImagePart:
    return ImagePart(data_base64=base64.b64encode(content).decode(), mime_type="image/png")


def _message(part: ImagePart) -> Message:
    return Message(role=Role.USER, content=[TextPart(text="What does it say?"), part])


def _gate(require: bool) -> NeutralizationGate:
    return NeutralizationGate([DefaultNeutralizer()], require=require)


@needs_ocr
def test_personal_data_in_an_image_is_blacked_out_and_the_rest_kept():
    original = _png("Invoice number 4711", "Mail: anna.muster@example.ch")
    session = NeutralizationSession()
    [sent] = _gate(require=True).apply_messages([_message(_part(original))], session)
    image = sent.content[1]
    assert isinstance(image, ImagePart) and image.data_base64 != _part(original).data_base64
    text, _ = ocr_words(base64.b64decode(image.data_base64), "eng")
    assert "Invoice number 4711" in text
    assert "anna.muster" not in text and "example.ch" not in text
    before, _ = ocr_words(original, "eng")
    assert "anna.muster@example.ch" in before  # the test image was readable to begin with
    assert sent.content[0] == TextPart(text="What does it say?")


@needs_ocr
def test_an_image_without_personal_data_passes_as_it_was():
    part = _part(_png("Quarterly revenue grew by 12 %"))
    message = _message(part)
    [sent] = _gate(require=True).apply_messages([message], NeutralizationSession())
    assert sent is message


@needs_ocr
def test_an_image_is_read_once_per_session(monkeypatch):
    import nyla.ai.image_gate as image_gate

    calls = []
    real = image_gate.ocr_words
    monkeypatch.setattr(image_gate, "ocr_words", lambda *a: calls.append(1) or real(*a))
    gate, session = _gate(require=True), NeutralizationSession()
    part = _part(_png("Mail: anna.muster@example.ch"))
    first = gate.apply_messages([_message(part)], session)
    again = gate.apply_messages([Message(role=Role.USER, content=[part])], session)
    assert len(calls) == 1
    assert again[0].content[0] == first[0].content[1]


def test_an_image_by_url_blocks_a_call_that_requires_neutralization():
    part = ImagePart(url="https://example.org/scan.png")
    with pytest.raises(NeutralizationError, match="by URL cannot be checked"):
        _gate(require=True).apply_messages([_message(part)], NeutralizationSession())


def test_an_image_by_url_passes_logged_where_neutralization_is_not_required():
    part = ImagePart(url="https://example.org/scan.png")
    gate = _gate(require=False)
    [sent] = gate.apply_messages([_message(part)], NeutralizationSession())
    assert sent.content[1] == part
    assert any("by URL cannot be checked" in e for e in gate.errors)


def test_without_an_ocr_engine_a_required_check_blocks_the_call(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    part = _part(b"\x89PNG\r\n\x1a\n not really")
    with pytest.raises(NeutralizationError, match="no OCR engine"):
        _gate(require=True).apply_messages([_message(part)], NeutralizationSession())
    gate = _gate(require=False)
    [sent] = gate.apply_messages([_message(part)], NeutralizationSession())
    assert sent.content[1] == part and gate.errors


@needs_ocr
def test_data_that_is_no_image_blocks_a_required_check():
    part = _part(b"this is not an image at all")
    with pytest.raises(NeutralizationError, match="cannot be checked"):
        _gate(require=True).apply_messages([_message(part)], NeutralizationSession())


def test_without_neutralizers_images_are_not_read(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    message = _message(ImagePart(url="https://example.org/scan.png"))
    gate = NeutralizationGate([], require=False)
    assert gate.apply_messages([message], NeutralizationSession()) == [message]


def test_a_call_with_an_image_not_yet_read_is_neutralized_off_the_event_loop():
    from nyla.ai.neutralize import pending_chars
    from nyla.cpu import OFFLOAD_CHARS

    message = _message(ImagePart(data_base64="aGk=", mime_type="image/png"))
    assert pending_chars([message], NeutralizationSession()) >= OFFLOAD_CHARS
    text_only = Message(role=Role.USER, content=[TextPart(text="short")])
    assert pending_chars([text_only], NeutralizationSession()) < OFFLOAD_CHARS


@needs_ocr
def test_an_image_in_a_data_url_is_read_like_one_given_as_data():
    encoded = base64.b64encode(_png("Mail: anna.muster@example.ch")).decode()
    part = ImagePart(url=f"data:image/png;base64,{encoded}")
    [sent] = _gate(require=True).apply_messages([_message(part)], NeutralizationSession())
    image = sent.content[1]
    assert image.data_base64 and image.url is None
    text, _ = ocr_words(base64.b64decode(image.data_base64), "eng")
    assert "anna.muster" not in text
