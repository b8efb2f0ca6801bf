"""OpenAI models nyla offers, with list prices (USD taken as CHF per million tokens)."""

from __future__ import annotations

import re

from nyla.sdk import TEXT_OPERATIONS, ModelCapabilities, ModelSpec, OperationType
from nyla_provider_openai.speech import speech_catalog

PROVIDER_ID = "openai"

VISION_OPERATIONS = [*TEXT_OPERATIONS, OperationType.IMAGE_ANALYSE]

_REASONING = re.compile(r"^(gpt-5|o\d)")


def is_reasoning_model(name: str) -> bool:
    """GPT-5.x and the o-series: ``max_completion_tokens`` only and no custom temperature."""
    return bool(_REASONING.match(name))


def _chat(
    name: str,
    price_in: float,
    price_out: float,
    *,
    window: int,
    max_out: int,
    quality: int,
    speed: int,
) -> ModelSpec:
    return ModelSpec(
        id=f"{PROVIDER_ID}:{name}",
        provider=PROVIDER_ID,
        name=name,
        operation_types=VISION_OPERATIONS,
        context_window=window,
        max_output_tokens=max_out,
        price_input_chf_per_mtok=price_in,
        price_output_chf_per_mtok=price_out,
        capabilities=ModelCapabilities(
            tools=True,
            streaming=True,
            vision=True,
            reasoning=is_reasoning_model(name),
            tool_choice=True,
            # the API rejects `stop` for reasoning models (GPT-5.x, o-series)
            stop_sequences=not is_reasoning_model(name),
            json_mode=True,
            structured_output=True,
        ),
        quality_rank=quality,
        speed_rank=speed,
    )


def _embedding(name: str, price: float, dims: int, quality: int) -> ModelSpec:
    return ModelSpec(
        id=f"{PROVIDER_ID}:{name}",
        provider=PROVIDER_ID,
        name=name,
        operation_types=[OperationType.EMBEDDING],
        context_window=8191,
        max_output_tokens=0,
        price_input_chf_per_mtok=price,
        price_output_chf_per_mtok=0.0,
        capabilities=ModelCapabilities(embedding_dimensions=dims, max_batch_size=2048),
        quality_rank=quality,
        speed_rank=70,
    )


def catalog() -> list[ModelSpec]:
    """Every model of the OpenAI provider."""
    return [
        _chat("gpt-5", 1.25, 10.0, window=400_000, max_out=128_000, quality=95, speed=40),
        _chat("gpt-5-mini", 0.25, 2.0, window=400_000, max_out=128_000, quality=80, speed=70),
        _chat("gpt-5-nano", 0.05, 0.4, window=400_000, max_out=128_000, quality=60, speed=90),
        _chat("gpt-4.1", 2.0, 8.0, window=1_047_576, max_out=32_768, quality=82, speed=60),
        _chat("gpt-4.1-mini", 0.4, 1.6, window=1_047_576, max_out=32_768, quality=70, speed=80),
        _chat("gpt-4o", 2.5, 10.0, window=128_000, max_out=16_384, quality=75, speed=65),
        _chat("o4-mini", 1.1, 4.4, window=200_000, max_out=100_000, quality=85, speed=45),
        _embedding("text-embedding-3-small", 0.02, 1536, 60),
        _embedding("text-embedding-3-large", 0.13, 3072, 80),
        ModelSpec(
            id=f"{PROVIDER_ID}:gpt-image-1",
            provider=PROVIDER_ID,
            name="gpt-image-1",
            operation_types=[OperationType.IMAGE_GENERATE],
            context_window=32_000,
            max_output_tokens=4096,
            price_input_chf_per_mtok=5.0,
            price_output_chf_per_mtok=40.0,
            capabilities=ModelCapabilities(image_generation=True),
            quality_rank=80,
            speed_rank=30,
        ),
        *speech_catalog(),
    ]
