"""OpenAI's audio endpoints: ``POST /v1/audio/speech`` (text to speech),
``/v1/audio/transcriptions`` and ``/v1/audio/translations`` (speech to text, into English)."""

from __future__ import annotations

from typing import Any

from nyla.sdk import (
    ModelCapabilities,
    ModelSpec,
    OperationType,
    ProviderBadRequestError,
    SpeechAudio,
    Transcript,
    Usage,
)

PROVIDER_ID = "openai"
VOICES = ("alloy", "ash", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer")
DEFAULT_VOICE = "alloy"
#: response_format -> (mime type, extension)
FORMATS = {
    "mp3": ("audio/mpeg", "mp3"),
    "wav": ("audio/wav", "wav"),
    "opus": ("audio/ogg", "opus"),
    "flac": ("audio/flac", "flac"),
}


def speech_catalog() -> list[ModelSpec]:
    """tts-1 and tts-1-hd (list price per million characters), whisper-1 (per minute)."""

    def spec(
        name: str, operation: OperationType, quality: int, speed: int, **price: Any
    ) -> ModelSpec:
        return ModelSpec(
            id=f"{PROVIDER_ID}:{name}",
            provider=PROVIDER_ID,
            name=name,
            operation_types=[operation],
            context_window=4096,
            max_output_tokens=0,
            price_input_chf_per_mtok=0.0,
            price_output_chf_per_mtok=0.0,
            quality_rank=quality,
            speed_rank=speed,
            **price,
        )

    return [
        spec("tts-1", OperationType.TEXT_TO_SPEECH, 60, 80, price_per_million_chars_chf=15.0),
        spec("tts-1-hd", OperationType.TEXT_TO_SPEECH, 75, 60, price_per_million_chars_chf=30.0),
        spec(
            "whisper-1",
            OperationType.SPEECH_TO_TEXT,
            70,
            60,
            price_per_audio_minute_chf=0.006,
            capabilities=ModelCapabilities(speech_translation=True),
        ),
    ]


def speech_params(name: str, text: str, *, voice: str | None, audio_format: str) -> dict[str, Any]:
    """The body of ``/v1/audio/speech``; an unknown voice or format is a bad request."""
    chosen = (voice or DEFAULT_VOICE).lower()
    if chosen not in VOICES:
        raise ProviderBadRequestError(
            f"openai: no voice {voice!r} (one of {', '.join(VOICES)})", provider=PROVIDER_ID
        )
    if audio_format not in FORMATS:
        raise ProviderBadRequestError(
            f"openai: no audio format {audio_format!r}", provider=PROVIDER_ID
        )
    return {"model": name, "input": text, "voice": chosen, "response_format": audio_format}


def speech_audio(content: bytes, audio_format: str, characters: int) -> SpeechAudio:
    """The audio answer, billed by characters (the endpoint reports no usage)."""
    mime, extension = FORMATS[audio_format]
    return SpeechAudio(
        content=content, mime_type=mime, extension=extension, usage=Usage(characters=characters)
    )


def transcript(data: dict[str, Any], *, translate: bool) -> Transcript:
    """A ``verbose_json`` transcription or translation (``text``, ``language``,
    ``duration``), or a ``json`` one with ``usage`` (``duration`` seconds or tokens)."""
    usage = Usage()
    billed = data.get("usage") or {}
    if billed.get("type") == "tokens":
        usage = Usage(
            input_tokens=int(billed.get("input_tokens") or 0),
            output_tokens=int(billed.get("output_tokens") or 0),
        )
    elif billed.get("type") == "duration":
        usage = Usage(audio_seconds=float(billed.get("seconds") or 0.0))
    elif data.get("duration") is not None:
        usage = Usage(audio_seconds=float(data["duration"]))
    language = data.get("language")
    return Transcript(
        text=str(data.get("text") or "").strip(),
        language="english" if translate else (str(language) if language else None),
        usage=usage,
    )
