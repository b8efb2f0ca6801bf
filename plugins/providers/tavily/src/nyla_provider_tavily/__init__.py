"""Tavily web search."""

from __future__ import annotations

from nyla.sdk import hookimpl
from nyla_provider_tavily.provider import TavilyProvider

__all__ = ["TavilyProvider"]


@hookimpl
def nyla_providers() -> list[TavilyProvider]:
    """The Tavily provider (unavailable until ``TAVILY_API_KEY`` is set)."""
    return [TavilyProvider()]
