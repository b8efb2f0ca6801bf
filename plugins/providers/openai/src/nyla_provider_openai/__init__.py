"""OpenAI models: chat with tools and streaming, embeddings, image generation."""

from __future__ import annotations

from nyla.sdk import hookimpl
from nyla_provider_openai.provider import OpenAIProvider

__all__ = ["OpenAIProvider"]


@hookimpl
def nyla_providers() -> list[OpenAIProvider]:
    """The OpenAI provider (models unavailable until ``OPENAI_API_KEY`` is set)."""
    return [OpenAIProvider()]
