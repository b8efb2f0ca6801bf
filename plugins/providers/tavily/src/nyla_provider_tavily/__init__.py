"""Tavily web search."""
