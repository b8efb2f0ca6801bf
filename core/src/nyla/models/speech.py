"""Speech: what a provider's speech models answer (text to speech, speech to text)."""

from __future__ import annotations

from nyla.models.ai import Usage
from nyla.models.base import WireModel

__all__ = ["SpeechAudio", "Transcript"]


class SpeechAudio(WireModel):
    """Audio a ``textToSpeech`` model made: the bytes, their mime type and file extension,
    and the usage it was billed for (``characters`` spoken, or tokens)."""

    content: bytes
    mime_type: str = "audio/mpeg"
    extension: str = "mp3"
    usage: Usage = Usage()


class Transcript(WireModel):
    """Text a ``speechToText`` model heard: the text, the language it heard (when the
    vendor says) and the usage (``audio_seconds`` heard, or tokens)."""

    text: str
    language: str | None = None
    usage: Usage = Usage()
