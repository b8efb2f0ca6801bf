"""The provider contract for Mistral: the official ``mistralai`` SDK over a mock transport
with payloads shaped as Mistral's API reference documents them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import nyla_provider_mistral
from nyla.testing.provider_contract import (
    OpenAIWire,
    ProviderContract,
    sdk_transport,
    sse_response,
)
from nyla_provider_mistral import MistralProvider


class MistralWire(OpenAIWire):
    model_name = "mistral-large-latest"

    def provider(self, handler: Any) -> MistralProvider:
        return MistralProvider(api_key="mistral-test", transport=sdk_transport(handler))

    def error_body(self, status: int) -> dict:
        messages = {401: "Unauthorized", 429: "Requests rate limit exceeded"}
        return {
            "object": "error",
            "message": messages.get(status, "Internal server error"),
            "type": "invalid_request_error" if status < 500 else "internal_server_error",
            "param": None,
            "code": str(status),
        }

    def stream_tool_call_reply(self, call_id: str, name: str, argument_chunks: list[str]) -> Any:
        """Mistral streams a tool call whole (id, name and the complete arguments in one
        delta), as its SDK's chunk schema requires; the assembler must still yield one call."""
        call = {
            "id": call_id,
            "type": "function",
            "index": 0,
            "function": {"name": name, "arguments": "".join(argument_chunks)},
        }
        events = [
            self.chunk({"role": "assistant", "content": ""}),
            self.chunk({"tool_calls": [call]}, "tool_calls"),
            self.usage_chunk((30, 8)),
        ]
        return sse_response(events)

    def tool_choice_fields(self, choice: Any) -> dict[str, Any]:
        """Mistral forces some tool call with ``"any"``; a named tool as OpenAI does."""
        if choice.mode == "required":
            return {"tool_choice": "any"}
        return super().tool_choice_fields(choice)

    def embedding_reply(self, request: Any, dimensions: int) -> Any:
        """Mistral's embeddings answer carries an ``id`` and full usage info."""
        body = super().embedding_reply(request, dimensions).json()
        body["id"] = "embd-aad6fc62b17349b192ef09225058bc45"
        body["usage"]["completion_tokens"] = 0
        return httpx.Response(200, json=body)


class TestMistralContract(ProviderContract):
    supports_embeddings = True
    auth_env_var = "MISTRAL_API_KEY"

    @pytest.fixture
    def plugin(self) -> Any:
        return nyla_provider_mistral

    @pytest.fixture
    def wire(self) -> MistralWire:
        return MistralWire()
