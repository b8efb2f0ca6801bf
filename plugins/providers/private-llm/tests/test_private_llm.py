"""Private-LLM specifics: configuration from variables, unreachable endpoints, gateways that
answer with HTML, and 503 with Retry-After."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from nyla.sdk import (
    AiCallRequest,
    ConfigurationError,
    Message,
    ProviderServerError,
    RetryPolicy,
    Role,
    reload_config,
)
from nyla.testing import ai_service
from nyla.testing.provider_contract import OpenAIWire, Recorder
from nyla_provider_private_llm import PrivateLlmProvider


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def service(provider: Any) -> tuple[Any, Sleeps]:
    sleeps = Sleeps()
    return ai_service(provider, retry=RetryPolicy(sleep=sleeps), name="p"), sleeps


def provider(handler: Any) -> PrivateLlmProvider:
    return PrivateLlmProvider(
        base_url="http://gpu-box:8000/v1",
        models=["qwen2.5:7b"],
        transport=httpx.MockTransport(handler),
    )


def ask() -> AiCallRequest:
    return AiCallRequest(operation="agent", messages=[Message(role=Role.USER, content="hi")])


@pytest.fixture
def clean_config(monkeypatch: pytest.MonkeyPatch, tmp_path) -> Any:
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    for name in (
        "NYLA_PRIVATE_LLM_MODELS",
        "NYLA_PRIVATE_LLM_EMBED_MODELS",
        "NYLA_PRIVATE_LLM_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    reload_config()
    yield monkeypatch
    reload_config()


def test_models_come_from_variables(clean_config: pytest.MonkeyPatch) -> None:
    clean_config.setenv("NYLA_PRIVATE_LLM_BASE_URL", "http://localhost:11434/v1")
    clean_config.setenv("NYLA_PRIVATE_LLM_MODELS", "llama3.1:8b, qwen2.5:7b")
    clean_config.setenv("NYLA_PRIVATE_LLM_EMBED_MODELS", "nomic-embed-text=768")
    clean_config.setenv("NYLA_PRIVATE_LLM_TOOLS", "0")
    specs = {s.id: s for s in PrivateLlmProvider().models()}
    assert set(specs) == {
        "private-llm:llama3.1:8b",
        "private-llm:qwen2.5:7b",
        "private-llm:nomic-embed-text",
    }
    assert all(s.available for s in specs.values())
    assert specs["private-llm:nomic-embed-text"].capabilities.embedding_dimensions == 768
    assert specs["private-llm:qwen2.5:7b"].capabilities.tools is False
    clean_config.setenv("NYLA_PRIVATE_LLM_EMBED_MODELS", "nomic-embed-text")
    with pytest.raises(ConfigurationError, match="name=dimensions"):
        PrivateLlmProvider().models()


async def test_vendor_model_name_keeps_its_colon() -> None:
    rec = Recorder(OpenAIWire().chat_reply("hi", 3, 1))
    ai, _ = service(provider(rec))
    await ai.call(ask())
    assert json.loads(rec.requests[0].content)["model"] == "qwen2.5:7b"
    assert "authorization" not in rec.requests[0].headers  # no key configured: none sent


async def test_unreachable_endpoint_names_it(clean_config) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    ai, sleeps = service(provider(refuse))
    with pytest.raises(ProviderServerError, match="gpu-box:8000"):
        await ai.call(ask())
    assert len(sleeps.delays) == 2  # retried like any transient failure


async def test_html_from_a_gateway_is_retried() -> None:
    rec = Recorder(
        httpx.Response(200, text="<html>502 Bad Gateway</html>"),
        OpenAIWire().chat_reply("recovered", 3, 1),
    )
    ai, sleeps = service(provider(rec))
    assert (await ai.call(ask())).content == "recovered"
    assert len(sleeps.delays) == 1


async def test_503_with_retry_after_is_honoured() -> None:
    rec = Recorder(
        httpx.Response(
            503, json={"error": {"message": "loading model"}}, headers={"retry-after": "5"}
        ),
        OpenAIWire().chat_reply("ready", 3, 1),
    )
    ai, sleeps = service(provider(rec))
    assert (await ai.call(ask())).content == "ready"
    assert len(sleeps.delays) == 1 and 5.0 <= sleeps.delays[0] <= 5.5


async def test_answer_options_follow_the_server_settings(clean_config, monkeypatch) -> None:
    """By default (an Ollama-style server) tool_choice is not declared, so the AI service
    refuses it before any request; vLLM-style servers turn it on, and JSON can be off."""
    from nyla.sdk import ToolChoice, ToolDefinition, UnsupportedCapabilityError

    for name in ("NYLA_PRIVATE_LLM_TOOL_CHOICE", "NYLA_PRIVATE_LLM_JSON"):
        monkeypatch.delenv(name, raising=False)
    reload_config()
    rec = Recorder(OpenAIWire().chat_reply("ok", 1, 1))
    default = provider(rec).models()[0].capabilities
    assert (default.tool_choice, default.stop_sequences, default.json_mode) == (False, True, True)
    ai, _ = service(provider(rec))
    tool = ToolDefinition(name="lookup", description="d", parameters={"type": "object"})
    request = ask().model_copy(update={"tools": [tool], "tool_choice": ToolChoice(mode="required")})
    with pytest.raises(UnsupportedCapabilityError, match="tool_choice"):
        await ai.call(request)
    assert rec.requests == []
    monkeypatch.setenv("NYLA_PRIVATE_LLM_TOOL_CHOICE", "1")
    monkeypatch.setenv("NYLA_PRIVATE_LLM_JSON", "0")
    reload_config()
    configured = provider(rec).models()[0].capabilities
    assert configured.tool_choice and not configured.json_mode and not configured.structured_output
