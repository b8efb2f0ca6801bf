"""Perplexity sonar models for research, with citations."""

from __future__ import annotations

from nyla.sdk import hookimpl
from nyla_provider_perplexity.provider import PerplexityProvider

__all__ = ["PerplexityProvider"]


@hookimpl
def nyla_providers() -> list[PerplexityProvider]:
    """The Perplexity provider (models unavailable until ``PERPLEXITY_API_KEY`` is set)."""
    return [PerplexityProvider()]
