"""ProviderBase: configuration lookup, unavailability naming the setting, unsupported calls."""

from __future__ import annotations

import pytest

from nyla.sdk import (
    ChatRequest,
    Message,
    ModelSpec,
    OperationType,
    ProviderAuthError,
    ProviderBase,
    Role,
    reload_config,
)


class Demo(ProviderBase):
    id = "demo"
    key_var = "DEMO_TEST_API_KEY"
    base_url_var = "DEMO_TEST_BASE_URL"

    def catalog(self) -> list[ModelSpec]:
        return [
            ModelSpec(
                id="demo:m1",
                provider="demo",
                name="m1",
                operation_types=[OperationType.AGENT],
                context_window=8000,
                price_input_chf_per_mtok=1.0,
                price_output_chf_per_mtok=2.0,
            )
        ]


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.delenv("DEMO_TEST_API_KEY", raising=False)
    monkeypatch.delenv("DEMO_TEST_BASE_URL", raising=False)
    reload_config()


def test_missing_settings_make_models_unavailable_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (spec,) = Demo().models()
    assert spec.available is False
    assert "DEMO_TEST_BASE_URL" in (spec.unavailable_reason or "")
    with pytest.raises(ProviderAuthError) as caught:
        Demo().require_configuration()
    assert caught.value.env_var == "DEMO_TEST_BASE_URL"

    monkeypatch.setenv("DEMO_TEST_BASE_URL", "http://x.test/v1/")
    (spec,) = Demo().models()
    assert "DEMO_TEST_API_KEY" in (spec.unavailable_reason or "")
    with pytest.raises(ProviderAuthError) as caught:
        Demo().require_configuration()
    assert caught.value.env_var == "DEMO_TEST_API_KEY"

    monkeypatch.setenv("DEMO_TEST_API_KEY", "k")
    provider = Demo()
    assert provider.models()[0].available is True
    assert provider.base_url == "http://x.test/v1"
    assert Demo(api_key="explicit").api_key == "explicit"


async def test_calls_a_provider_does_not_offer_raise_not_implemented() -> None:
    provider = Demo(api_key="k", base_url="http://x.test")
    request = ChatRequest(model="demo:m1", messages=[Message(role=Role.USER, content="hi")])
    with pytest.raises(NotImplementedError, match="demo does not offer chat"):
        await provider.chat(request)
    with pytest.raises(NotImplementedError, match="streaming"):
        async for _ in provider.stream(request):
            pass
    with pytest.raises(NotImplementedError, match="embeddings"):
        await provider.embed("demo:m1", ["x"])
    with pytest.raises(NotImplementedError, match="web search"):
        await provider.web_search("demo:m1", "q")
    with pytest.raises(NotImplementedError, match="images"):
        await provider.generate_image("demo:m1", "a cat")
