"""The provider contract for Mistral: the official ``mistralai`` SDK over a mock transport
with payloads shaped as Mistral's API reference documents them. The SDK runs on ``httpx2``
(a fork of httpx), so a small bridge hands its requests to the contract's httpx handlers."""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import pytest

import nyla_provider_mistral
from nyla.testing.provider_contract import OpenAIWire, ProviderContract, sse_response
from nyla_provider_mistral import MistralProvider


def bridge(handler: Any) -> httpx2.MockTransport:
    """An httpx2 mock transport delegating to an httpx handler."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        mirrored = httpx.Request(
            request.method,
            str(request.url),
            headers=list(request.headers.multi_items()),
            content=request.read(),
        )
        try:
            response = handler(mirrored)
        except httpx.TimeoutException as exc:
            raise httpx2.ReadTimeout(str(exc), request=request) from exc
        return httpx2.Response(
            response.status_code,
            headers=list(response.headers.multi_items()),
            content=response.read(),
        )

    return httpx2.MockTransport(handle)


class MistralWire(OpenAIWire):
    model_name = "mistral-large-latest"

    def provider(self, handler: Any) -> MistralProvider:
        return MistralProvider(api_key="mistral-test", transport=bridge(handler))

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
