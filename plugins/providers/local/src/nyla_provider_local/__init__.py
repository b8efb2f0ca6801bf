"""Offline embeddings: static WordLlama vectors (``local:wordllama-l2-256``, the default), a
deterministic hashing embedder (``local:hash-384``), optionally all-MiniLM-L6-v2
(``local:all-minilm-l6-v2``, extra ``[minilm]``)."""

from __future__ import annotations

from nyla.sdk import hookimpl
from nyla_provider_local.provider import LocalProvider

__all__ = ["LocalProvider"]


@hookimpl
def nyla_providers() -> list[LocalProvider]:
    """The local provider."""
    return [LocalProvider()]
