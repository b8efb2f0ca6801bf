"""``textToSpeech`` and ``speechToText`` through the AI service's speech models
(``ctx.services.ai.speech``): priced, the run's budget checked, the cost charged."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from nyla.sdk import (
    BudgetExceeded,
    ModelNotAvailableError,
    NeutralizationError,
    ProviderError,
    Tool,
    ToolContext,
    ToolResult,
    download_name,
)
from nyla.sdk.documents import save_tool_file

#: audio types the speech-to-text models take
AUDIO_TYPES = frozenset(
    {
        "audio/mpeg",
        "audio/mp3",
        "audio/mp4",
        "audio/m4a",
        "audio/x-m4a",
        "audio/wav",
        "audio/x-wav",
        "audio/wave",
        "audio/ogg",
        "audio/webm",
        "audio/flac",
        "video/mp4",
        "video/webm",
    }
)
#: bytes of one recording at most (OpenAI's limit is 25 MB)
MAX_AUDIO_BYTES = 25_000_000


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class TextToSpeechArgs(_Args):
    """Arguments of ``textToSpeech``."""

    text: str = Field(min_length=1, max_length=4096, description="What to say.")
    voice: str | None = Field(default=None, description="A voice of the model (e.g. alloy).")
    language: str | None = Field(default=None, description="Language of the text (ISO code).")
    format: Literal["mp3", "wav", "opus", "flac"] = "mp3"
    name: str = Field(default="speech", description="File name without extension.")


class SpeechToTextArgs(_Args):
    """Arguments of ``speechToText``."""

    file_id: str = Field(min_length=1, description="The recording's file id.")
    language: str | None = Field(
        default=None, description="Language spoken (ISO 639-1), when known."
    )
    translate_to_english: bool = Field(
        default=False, description="Answer in English whatever the language spoken."
    )


def _failed(exc: Exception) -> ToolResult:
    if isinstance(exc, NeutralizationError):
        return ToolResult.fail(str(exc), "NEUTRALIZATION_REQUIRED")
    if isinstance(exc, BudgetExceeded):
        return ToolResult.fail(str(exc), "BUDGET_EXCEEDED")
    if isinstance(exc, ModelNotAvailableError):
        return ToolResult.fail(str(exc), "NOT_AVAILABLE", hint="a speech model is needed")
    return ToolResult.fail(str(exc), "SPEECH_FAILED")


async def text_to_speech(args: TextToSpeechArgs, ctx: ToolContext) -> ToolResult:
    """Speak the text and save the audio as a file and chat document."""
    try:
        audio = await ctx.services.ai.speech.text_to_speech(
            args.text,
            context=ctx.run,
            voice=args.voice,
            language=args.language,
            audio_format=args.format,
            max_cost_chf=ctx.remaining_budget_chf,
            on_cost=ctx.charge,
        )
    except (ProviderError, ModelNotAvailableError, BudgetExceeded, NeutralizationError) as exc:
        return _failed(exc)
    name = f"{download_name(args.name, 'speech')}.{audio.extension}"
    saved = await save_tool_file(
        ctx, name, audio.content, audio.mime_type, label=f"textToSpeech:{name}"
    )
    return ToolResult.ok(saved.summary, data={"files": [saved.to_wire()]})


async def speech_to_text(args: SpeechToTextArgs, ctx: ToolContext) -> ToolResult:
    """The text heard in one of the user's recordings."""
    item = await ctx.services.files.get(args.file_id, ctx.run)
    if item is None:
        return ToolResult.fail(f"no file {args.file_id!r}", "NOT_FOUND", field="fileId")
    mime = (item.mime_type or "").split(";")[0].strip().lower()
    if mime not in AUDIO_TYPES:
        return ToolResult.fail(
            f"{item.name} is {mime or 'of no known type'}, not a recording", "UNSUPPORTED_TYPE"
        )
    content = await ctx.services.files.read_bytes(args.file_id, ctx.run)
    if len(content) > MAX_AUDIO_BYTES:
        return ToolResult.fail(
            f"{item.name} has {len(content)} bytes, more than {MAX_AUDIO_BYTES}", "TOO_LARGE"
        )
    try:
        heard = await ctx.services.ai.speech.speech_to_text(
            content,
            file_name=item.name,
            mime_type=mime,
            context=ctx.run,
            language=args.language,
            translate=args.translate_to_english,
            max_cost_chf=ctx.remaining_budget_chf,
            on_cost=ctx.charge,
        )
    except (ProviderError, ModelNotAvailableError, BudgetExceeded, NeutralizationError) as exc:
        return _failed(exc)
    return ToolResult.ok(
        heard.text,
        data={"language": heard.language, "seconds": heard.usage.audio_seconds or None},
    )


def speech_tools() -> list[Tool]:
    """``textToSpeech`` and ``speechToText``."""
    return [
        Tool.from_model(
            "textToSpeech",
            "Speak a text with a speech model and save the audio as a file.",
            TextToSpeechArgs,
            text_to_speech,
            timeout_s=120,
        ),
        Tool.from_model(
            "speechToText",
            "Transcribe one of the user's recordings (by file id); translateToEnglish=true "
            "answers in English. translateText translates text into other languages.",
            SpeechToTextArgs,
            speech_to_text,
            read_only=True,
            timeout_s=300,
        ),
    ]
