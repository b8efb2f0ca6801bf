"""Anthropic Claude models: messages API with tool use and streaming."""

from __future__ import annotations

from nyla.sdk import hookimpl
from nyla_provider_anthropic.provider import AnthropicProvider

__all__ = ["AnthropicProvider"]


@hookimpl
def nyla_providers() -> list[AnthropicProvider]:
    """The Anthropic provider (models unavailable until ``ANTHROPIC_API_KEY`` is set)."""
    return [AnthropicProvider()]
