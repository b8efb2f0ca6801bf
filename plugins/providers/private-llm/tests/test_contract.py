"""The provider contract for the private LLM endpoint (an Ollama-style OpenAI-compatible API
over httpx.MockTransport)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import nyla_provider_private_llm
from nyla.testing.provider_contract import OpenAIWire, ProviderContract
from nyla_provider_private_llm import PrivateLlmProvider


class PrivateLlmWire(OpenAIWire):
    model_name = "llama3.1:8b"

    def provider(self, handler: Any) -> PrivateLlmProvider:
        return PrivateLlmProvider(
            base_url="http://llm.internal:11434/v1",
            api_key="local-secret",
            models=["llama3.1:8b", "qwen2.5:7b"],
            embedding_models={"nomic-embed-text": 768},
            tool_choice=True,  # a vLLM-style server
            transport=httpx.MockTransport(handler),
        )


class TestPrivateLlmContract(ProviderContract):
    supports_embeddings = True
    auth_env_var = "NYLA_PRIVATE_LLM_API_KEY"
    required_env_var = "NYLA_PRIVATE_LLM_BASE_URL"

    @pytest.fixture
    def plugin(self) -> Any:
        return nyla_provider_private_llm

    @pytest.fixture
    def wire(self) -> PrivateLlmWire:
        return PrivateLlmWire()
