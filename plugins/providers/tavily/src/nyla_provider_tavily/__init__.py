"""Tavily web search."""

from __future__ import annotations

import nyla
from nyla_provider_tavily.provider import TavilyProvider

__all__ = ["TavilyProvider"]


@nyla.hookimpl
def nyla_providers() -> list[TavilyProvider]:
    """The Tavily provider (unavailable until ``TAVILY_API_KEY`` is set)."""
    return [TavilyProvider()]
