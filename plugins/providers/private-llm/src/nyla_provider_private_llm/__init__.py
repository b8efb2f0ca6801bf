"""Any OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp, LM Studio): data stays on premises."""

from __future__ import annotations

from nyla.sdk import hookimpl
from nyla_provider_private_llm.provider import PrivateLlmProvider

__all__ = ["PrivateLlmProvider"]


@hookimpl
def nyla_providers() -> list[PrivateLlmProvider]:
    """The private LLM provider (its models are unavailable until a base URL is set)."""
    return [PrivateLlmProvider()]
