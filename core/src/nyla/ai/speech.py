"""Speech through the AI service: text to speech and speech to text (and into English).

Both go the way every operation goes (:mod:`nyla.ai.route`): the model chain of the
operation (``textToSpeech`` / ``speechToText`` in the model specs), a budget preflight,
retries and fallback, the cost settled in the totals and handed to ``on_cost``. Speech is
priced per character spoken or per minute of audio (``ModelSpec.price_per_million_chars_chf``,
``price_per_audio_minute_chf``), token prices where the vendor bills tokens. A provider
speaks with ``synthesize_speech(model, text, *, voice, language, audio_format)`` and listens
with ``transcribe(model, audio, *, file_name, mime_type, language, translate)``.

The text to speak passes the neutralization gate like any prompt. Audio cannot be checked
for personal data, so where the run requires neutralization only an on-premises model may
hear it (the others are left out of the chain; none left is a :class:`NeutralizationError`).
"""

from __future__ import annotations

import io
import wave
from collections.abc import Callable
from typing import Any

from nyla.ai.pipeline_steps import PipelineSteps
from nyla.ai.pricing import call_cost_chf
from nyla.ai.route import Route
from nyla.cpu import off_loop
from nyla.errors import BudgetExceeded, ModelNotAvailableError, NeutralizationError
from nyla.models.ai import ModelSpec, OperationType, Usage
from nyla.models.speech import SpeechAudio, Transcript

#: bytes per second of audio assumed before a compressed file is heard (128 kbit/s)
COMPRESSED_BYTES_PER_S = 16_000
AUDIO_FORMATS = {"mp3": "audio/mpeg", "wav": "audio/wav", "opus": "audio/ogg", "flac": "audio/flac"}


def audio_seconds(content: bytes, mime_type: str) -> float:
    """The length of ``content`` (exact for WAV, else estimated from its size)."""
    if mime_type in ("audio/wav", "audio/x-wav", "audio/wave"):
        try:
            with wave.open(io.BytesIO(content)) as w:
                return w.getnframes() / float(w.getframerate() or 1)
        except (wave.Error, EOFError):
            pass
    return len(content) / COMPRESSED_BYTES_PER_S


def _fit(
    route: Route,
    usage: Usage,
    budget: float | None,
    *,
    on_premises_only: bool = False,
    translate: bool = False,
) -> None:
    """Narrow ``route.chain`` to the models that may take the call (on premises, able to
    translate, as asked) and fit ``budget`` for ``usage`` (the first must fit, as for every
    operation)."""
    fitting: list[ModelSpec] = []
    for spec in route.chain:
        if on_premises_only and not spec.on_premises:
            continue
        if translate and not spec.capabilities.speech_translation:
            continue
        estimate = call_cost_chf(spec, usage)
        if budget is not None and (estimate is None or estimate > budget):
            error = BudgetExceeded(
                f"{spec.id} is estimated at "
                f"{'an unknown price' if estimate is None else f'{estimate:.6f} CHF'}, "
                f"more than the remaining budget of {budget:.6f} CHF",
                estimated_chf=estimate,
                remaining_chf=budget,
            )
            if not fitting:
                raise error
            route.note_fallback(spec, error)
            continue
        fitting.append(spec)
    if on_premises_only and not fitting:
        raise NeutralizationError(
            "audio cannot be checked for personal data and this run requires neutralization: "
            "only an on-premises speech-to-text model may hear it, and none is available"
        )
    if translate and not fitting:
        raise ModelNotAvailableError("no speech-to-text model translates speech into English")
    route.chain = fitting


class SpeechOperations:
    """``ai.speech``: text to speech and speech to text over the AI service's pipeline."""

    def __init__(self, pipeline: PipelineSteps) -> None:
        self._ai = pipeline

    async def text_to_speech(
        self,
        text: str,
        *,
        context: Any = None,
        voice: str | None = None,
        language: str | None = None,
        audio_format: str = "mp3",
        model: str | None = None,
        max_cost_chf: float | None = None,
        on_cost: Callable[[float], object] | None = None,
    ) -> SpeechAudio:
        """``text`` (neutralized) spoken by a ``textToSpeech`` model as ``audio_format``."""
        if audio_format not in AUDIO_FORMATS:
            raise ValueError(f"audio format {audio_format!r}: one of {', '.join(AUDIO_FORMATS)}")
        await self._ai._govern(context)
        route, clean = await off_loop(
            len(text),
            self._ai._text_route,
            OperationType.TEXT_TO_SPEECH,
            text,
            context,
            model=model,
            max_output=0,
            what="text-to-speech model",
        )
        _fit(route, Usage(characters=len(clean)), max_cost_chf)
        await self._ai._admit(context, route)
        spec, _estimate, audio = await self._ai._answer(
            route,
            lambda s, p: p.synthesize_speech(
                s.id, clean, voice=voice, language=language, audio_format=audio_format
            ),
            expect=SpeechAudio,
            capability=("synthesize_speech", "speak"),
        )
        usage = audio.usage if audio.usage != Usage() else Usage(characters=len(clean))
        cost, _unknown = self._ai._settle(context, spec, usage, route)
        if on_cost is not None:
            on_cost(cost)
        return audio.model_copy(update={"usage": usage})

    async def speech_to_text(
        self,
        audio: bytes,
        *,
        file_name: str,
        mime_type: str,
        context: Any = None,
        language: str | None = None,
        translate: bool = False,
        model: str | None = None,
        max_cost_chf: float | None = None,
        on_cost: Callable[[float], object] | None = None,
    ) -> Transcript:
        """What a ``speechToText`` model hears in ``audio`` (``translate``: in English)."""
        await self._ai._govern(context)
        route, _clean = self._ai._text_route(
            OperationType.SPEECH_TO_TEXT,
            "",
            context,
            model=model,
            max_output=0,
            what="speech-to-text model",
        )
        seconds = audio_seconds(audio, mime_type)
        required = bool(getattr(context, "require_neutralization", False))
        _fit(
            route,
            Usage(audio_seconds=seconds),
            max_cost_chf,
            on_premises_only=required,
            translate=translate,
        )
        await self._ai._admit(context, route)
        spec, _estimate, transcript = await self._ai._answer(
            route,
            lambda s, p: p.transcribe(
                s.id,
                audio,
                file_name=file_name,
                mime_type=mime_type,
                language=language,
                translate=translate,
            ),
            expect=Transcript,
            capability=("transcribe", "transcribe speech"),
        )
        usage = transcript.usage if transcript.usage != Usage() else Usage(audio_seconds=seconds)
        cost, _unknown = self._ai._settle(context, spec, usage, route)
        if on_cost is not None:
            on_cost(cost)
        return transcript.model_copy(update={"usage": usage})
