"""Mistral models: chat with tools, embeddings."""

from __future__ import annotations

from nyla.sdk import hookimpl
from nyla_provider_mistral.provider import MistralProvider

__all__ = ["MistralProvider"]


@hookimpl
def nyla_providers() -> list[MistralProvider]:
    """The Mistral provider (models unavailable until ``MISTRAL_API_KEY`` is set)."""
    return [MistralProvider()]
