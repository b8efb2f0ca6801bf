"""The provider contract for OpenAI: the official SDK over httpx.MockTransport with payloads
shaped as the OpenAI API reference documents them."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import nyla_provider_openai
from nyla.sdk import ChatRequest, Message, Role
from nyla.testing.provider_contract import OpenAIWire, ProviderContract, Recorder, sdk_transport
from nyla_provider_openai import OpenAIProvider


class OpenAIApiWire(OpenAIWire):
    model_name = "gpt-5-mini"

    def provider(self, handler: Any) -> OpenAIProvider:
        return OpenAIProvider(api_key="sk-test", transport=sdk_transport(handler))


class TestOpenAIContract(ProviderContract):
    supports_embeddings = True
    auth_env_var = "OPENAI_API_KEY"

    @pytest.fixture
    def plugin(self) -> Any:
        return nyla_provider_openai

    @pytest.fixture
    def wire(self) -> OpenAIApiWire:
        return OpenAIApiWire()


def _request(model: str) -> ChatRequest:
    return ChatRequest(
        model=model,
        messages=[Message(role=Role.USER, content="hi")],
        temperature=0.2,
        max_output_tokens=300,
    )


@pytest.mark.parametrize("model", ["openai:gpt-5-mini", "openai:o4-mini"])
async def test_reasoning_models_get_max_completion_tokens_and_no_temperature(model: str) -> None:
    wire = OpenAIApiWire()
    rec = Recorder(wire.chat_reply("ok", 1, 1))
    await wire.provider(rec).chat(_request(model))
    body = json.loads(rec.requests[0].content)
    assert body["max_completion_tokens"] == 300
    assert "max_tokens" not in body and "temperature" not in body


async def test_classic_models_keep_temperature_and_max_tokens() -> None:
    wire = OpenAIApiWire()
    rec = Recorder(wire.chat_reply("ok", 1, 1))
    await wire.provider(rec).chat(_request("openai:gpt-4.1"))
    body = json.loads(rec.requests[0].content)
    assert body["temperature"] == 0.2 and body["max_tokens"] == 300
    assert rec.requests[0].headers["authorization"] == "Bearer sk-test"
    assert rec.requests[0].url.path == "/v1/chat/completions"


async def test_image_generation_returns_base64_parts() -> None:
    rec = Recorder(
        httpx.Response(200, json={"created": 1_700_000_000, "data": [{"b64_json": "aGVsbG8="}]})
    )
    provider = OpenAIApiWire().provider(rec)
    parts = await provider.generate_image("openai:gpt-image-1", "a red bicycle")
    assert parts[0].data_base64 == "aGVsbG8="
    assert json.loads(rec.requests[0].content)["prompt"] == "a red bicycle"
