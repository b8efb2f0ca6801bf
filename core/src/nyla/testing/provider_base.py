"""The base of the provider contract (:class:`~nyla.testing.provider_contract.ProviderContract`):
the capabilities a provider's models declare, the fixtures its tests override, the helpers
every part of the suite uses, and the discovery tests."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from nyla.checks import check_model_spec
from nyla.testing.contract_base import PluginContract, owned
from nyla.testing.provider_wire import ProviderWire, Recorder, _Sleeps

#: what a provider can offer, as the suite's tests need it
CAPABILITIES = (
    "chat",
    "tools",
    "streaming",
    "vision",
    "embeddings",
    "web_search",
    "tool_choice",
    "stop_sequences",
    "json_mode",
    "structured_output",
)
#: the answer options: capabilities a text model declares in ``ModelCapabilities``
ANSWER_OPTIONS = ("tool_choice", "stop_sequences", "json_mode", "structured_output")
#: a 1x1 PNG, base64
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def _user(text: str) -> list[Any]:
    from nyla.models.ai import Message, Role

    return [Message(role=Role.USER, content=text)]


WEATHER_TOOL: dict[str, Any] = {
    "name": "get_weather",
    "description": "Current weather of a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def declared_capabilities(plugin: Any, *providers: Any) -> set[str]:
    """What the models of the plugin (and of ``providers``, e.g. the one the wire builds with
    the configuration the tests give it) declare, in the names of :data:`CAPABILITIES`:
    ``chat`` (a text operation), ``tools``, ``streaming``, ``embeddings`` (the embedding
    operation), ``web_search`` (the operation or the capability) and the answer options of
    text models (:data:`ANSWER_OPTIONS`; ``tool_choice`` only with ``tools``)."""
    from nyla.models.ai import TEXT_OPERATIONS, OperationType

    out: set[str] = set()
    for provider in [*owned(plugin, "providers").values(), *providers]:
        for spec in provider.models():
            operations = set(spec.operation_types)
            if operations & set(TEXT_OPERATIONS):
                out.add("chat")
            if spec.capabilities.tools:
                out.add("tools")
            if spec.capabilities.streaming:
                out.add("streaming")
            text = bool(operations & set(TEXT_OPERATIONS))
            if spec.capabilities.vision and text:
                out.add("vision")
            out.update(
                option
                for option in ANSWER_OPTIONS
                if text
                and getattr(spec.capabilities, option)
                and (option != "tool_choice" or spec.capabilities.tools)
            )
            if OperationType.EMBEDDING in operations:
                out.add("embeddings")
            if OperationType.WEB_SEARCH in operations or spec.capabilities.web_search:
                out.add("web_search")
    return out


class ProviderContractBase(PluginContract):
    """What every part of the provider contract shares: the fixtures a provider's tests
    override (``plugin``, ``wire``), the capabilities read from its models, the helpers, and
    the discovery tests."""

    #: ``None``: taken from the models the plugin declares (see :func:`declared_capabilities`);
    #: a value set here must agree with them (the suite fails otherwise)
    supports_chat: bool | None = None
    supports_tools: bool | None = None
    supports_streaming: bool | None = None
    supports_vision: bool | None = None
    supports_embeddings: bool | None = None
    supports_web_search: bool | None = None
    supports_tool_choice: bool | None = None
    supports_stop_sequences: bool | None = None
    supports_json_mode: bool | None = None
    supports_structured_output: bool | None = None
    #: the variable a rejected or missing key names (``None``: the provider needs no key)
    auth_env_var: str | None = None
    #: the variable without which every model is listed unavailable (default: auth_env_var)
    required_env_var: str | None = None
    #: model ids used by the wire tests (default: the best-ranked model for the operation)
    chat_model: str | None = None
    embedding_model: str | None = None
    search_model: str | None = None
    #: how the vendor can deliver malformed tool arguments: "chat" or "stream"
    malformed_arguments_via: str = "chat"
    #: the operation the chat wire tests ask for
    chat_operation: str = "agent"
    #: False for providers that call no HTTP API (then ``wire`` returns the provider itself
    #: and only the embedding / discovery tests run)
    has_wire: bool = True

    @pytest.fixture
    def wire(self) -> ProviderWire:
        """The vendor-shaped fake of the provider's API. Override."""
        raise NotImplementedError("override the `wire` fixture with your ProviderWire")

    @pytest.fixture(autouse=True)
    def _declared(self, plugin: Any, request: pytest.FixtureRequest) -> None:
        """Reads what the models declare before each test: the plugin's as installed, and
        the wire's provider's (configured as the tests configure it)."""
        wire = request.getfixturevalue("wire")
        tested = wire.provider(Recorder()) if isinstance(wire, ProviderWire) else wire
        self._capabilities = declared_capabilities(plugin, tested)

    def can(self, capability: str) -> bool:
        """Whether the provider offers ``capability`` (one of :data:`CAPABILITIES`), as its
        models declare it; fails the test when a ``supports_*`` attribute disagrees."""
        declared = capability in self._capabilities
        flag = getattr(type(self), f"supports_{capability}")
        if flag is not None and bool(flag) != declared:
            pytest.fail(
                f"{type(self).__name__}.supports_{capability} = {flag}, but the plugin's models "
                f"{'declare' if declared else 'do not declare'} {capability}: a suite cannot "
                "switch off what the plugin offers (or test what it does not)"
            )
        return declared

    @property
    def supports(self) -> dict[str, bool]:
        """Every capability and whether it applies (see :meth:`can`)."""
        return {c: self.can(c) for c in CAPABILITIES}

    def test_capability_flags_match_the_models(self, plugin: Any) -> None:
        """``supports_*`` attributes, where a suite sets them, agree with the models."""
        wrong = []
        for capability in CAPABILITIES:
            flag = getattr(type(self), f"supports_{capability}")
            if flag is not None and bool(flag) != (capability in self._capabilities):
                wrong.append(f"supports_{capability} = {flag}")
        assert not wrong, (
            f"{type(self).__name__}: {', '.join(wrong)} contradict the models' declarations "
            f"(declared: {sorted(self._capabilities) or 'nothing'})"
        )

    # ---- helpers --------------------------------------------------------------------------

    def _service(self, provider: Any, *extra: Any, settings: dict | None = None) -> Any:
        from nyla.ai.retry import RetryPolicy
        from nyla.testing.kernels import ai_service

        sleeps = _Sleeps()
        retry = RetryPolicy(sleep=sleeps)
        service = ai_service(provider, *extra, retry=retry, settings=settings, name="wire")
        service.sleeps = sleeps  # type: ignore[attr-defined]
        return service

    def _model(self, provider: Any, operation: str, explicit: str | None) -> str:
        if explicit:
            return explicit
        from nyla.ai.selector import rank_key

        specs = [s for s in provider.models() if operation in s.operation_types and s.available]
        if operation == "agent" and self.can("tools"):
            specs = [s for s in specs if s.capabilities.tools]
        assert specs, f"no available {operation} model on {provider.id}"
        return sorted(specs, key=rank_key)[0].id

    def _request(self, provider: Any, text: str, **kw: Any) -> Any:
        from nyla.models.ai import AiCallRequest, OperationType

        kw.setdefault("model", self._model(provider, self.chat_operation, self.chat_model))
        operation = OperationType(self.chat_operation)
        return AiCallRequest(operation=operation, messages=_user(text), **kw)

    @staticmethod
    def _tools() -> list[Any]:
        from nyla.models.ai import ToolDefinition

        return [ToolDefinition(**WEATHER_TOOL)]

    def _option_model(self, provider: Any, capability: str) -> str:
        """The model the tests of an answer option call: the suite's ``chat_model`` when it
        declares ``capability``, else the best-ranked chat model that does."""
        from nyla.ai.selector import rank_key

        specs = [
            s
            for s in provider.models()
            if self.chat_operation in s.operation_types
            and s.available
            and getattr(s.capabilities, capability)
            and (capability != "tool_choice" or s.capabilities.tools)
        ]
        assert specs, (
            f"{provider.id}: no available {self.chat_operation} model declares {capability}"
        )
        chosen = next((s for s in specs if s.id == self.chat_model), None)
        return (chosen or sorted(specs, key=rank_key)[0]).id

    def _need(self, flag: bool, what: str) -> None:
        if not flag:
            pytest.skip(f"the provider's models do not declare {what}")

    # ---- discovery ------------------------------------------------------------------------

    def test_models_are_complete(self, plugin: Any) -> None:
        providers = owned(plugin, "providers")
        assert providers, "the plugin registers no provider (nyla_providers), or it clashed"
        for pid, provider in providers.items():
            specs = provider.models()
            assert specs, f"provider {pid} lists no models"
            for spec in specs:
                problems = check_model_spec(spec, pid)
                assert problems == [], f"{spec.id}: " + "; ".join(problems)

    def test_discovery_does_not_import_vendor_sdk(self, plugin: Any) -> None:
        import subprocess
        import sys

        module = plugin.__name__ if inspect.ismodule(plugin) else type(plugin).__module__
        code = (
            "import sys, importlib\n"
            f"m = importlib.import_module({module!r})\n"
            "ps = [p for f in [getattr(m, 'nyla_providers', None)] if f for p in f()]\n"
            "[p.models() for p in ps]\n"
            "bad = [n for n in ('openai', 'anthropic', 'mistralai', 'torch',"
            " 'sentence_transformers') if n in sys.modules]\n"
            "print(','.join(bad))\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        assert out == "", f"listing models imported vendor SDKs: {out}"

    def test_missing_key_lists_models_unavailable(
        self, plugin: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
    ) -> None:
        variable = self.required_env_var or self.auth_env_var
        if variable is None:
            pytest.skip("the provider needs no configuration")
        from nyla import config

        monkeypatch.delenv(variable, raising=False)
        monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "absent.toml"))
        config.reload()
        try:
            specs = [s for p in owned(plugin, "providers").values() for s in p.models()]
            assert specs, "the plugin lists no models"
            listed = [s.id for s in specs if s.available]
            assert not listed, f"without {variable} these models are still available: {listed}"
            silent = [s.id for s in specs if variable not in (s.unavailable_reason or "")]
            assert not silent, f"unavailable models whose reason does not name {variable}: {silent}"
        finally:
            config.reload()
