"""Contract suite for model provider plugins.

A provider's test module subclasses :class:`ProviderContract`, overrides the ``plugin``
fixture (the plugin module) and, for the wire tests, the ``wire`` fixture: a
:class:`ProviderWire` that builds the provider over an ``httpx.MockTransport`` and shapes
answers as the vendor's public API documents them. Every wire test runs the real provider
code (its SDK or httpx client) through the real AI service, so conversion, error mapping,
retries, fallback and cost are tested together.

Which tests apply follows from what the plugin's models declare (``ModelSpec.operation_types``
and ``ModelSpec.capabilities``), never from a switch: a ``supports_*`` attribute a suite sets
must agree with the declarations, or the suite fails (so a declared capability cannot be
skipped). The guard in :class:`~nyla.testing.contract_base.ContractSuite` forbids deleting or
overriding a contract test without an ``xfail`` reason.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from nyla.checks import check_model_spec
from nyla.testing.contract_base import PluginContract, owned
from nyla.testing.provider_wire import (
    Handler,
    OpenAIWire,
    ProviderWire,
    Recorder,
    _Sleeps,
    fake_vector,
    sdk_transport,
    sse_response,
)

__all__ = [
    "CAPABILITIES",
    "Handler",
    "OpenAIWire",
    "ProviderContract",
    "ProviderWire",
    "Recorder",
    "declared_capabilities",
    "fake_vector",
    "sdk_transport",
    "sse_response",
]

#: what a provider can offer, as the suite's tests need it
CAPABILITIES = ("chat", "tools", "streaming", "vision", "embeddings", "web_search")
#: a 1x1 PNG, base64
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def _user(text: str) -> list[Any]:
    from nyla.models.ai import Message, Role

    return [Message(role=Role.USER, content=text)]


WEATHER_TOOL = {
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
    operation) and ``web_search`` (the operation or the capability)."""
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
            if spec.capabilities.vision and operations & set(TEXT_OPERATIONS):
                out.add("vision")
            if OperationType.EMBEDDING in operations:
                out.add("embeddings")
            if OperationType.WEB_SEARCH in operations or spec.capabilities.web_search:
                out.add("web_search")
    return out


class ProviderContract(PluginContract):
    """Contract for model provider plugins. Override ``plugin`` and, for the wire tests,
    ``wire`` (a :class:`ProviderWire`)."""

    #: ``None``: taken from the models the plugin declares (see :func:`declared_capabilities`);
    #: a value set here must agree with them (the suite fails otherwise)
    supports_chat: bool | None = None
    supports_tools: bool | None = None
    supports_streaming: bool | None = None
    supports_vision: bool | None = None
    supports_embeddings: bool | None = None
    supports_web_search: bool | None = None
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
        from nyla.ai.service import AiService
        from nyla.kernel import Kernel
        from nyla.plugins import PluginHost
        from nyla.testing.scripted import ScriptedPlugin

        host = PluginHost.from_plugins([ScriptedPlugin(provider, *extra)], names=["wire"])
        kernel = Kernel(plugins=host, settings={"ai": settings or {}})
        sleeps = _Sleeps()
        service = AiService(kernel, retry=RetryPolicy(sleep=sleeps))
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
        from nyla.models.ai import AiCallRequest

        kw.setdefault("model", self._model(provider, self.chat_operation, self.chat_model))
        return AiCallRequest(operation=self.chat_operation, messages=_user(text), **kw)

    @staticmethod
    def _tools() -> list[Any]:
        from nyla.models.ai import ToolDefinition

        return [ToolDefinition(**WEATHER_TOOL)]

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
        from nyla.ai import config

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

    # ---- chat -----------------------------------------------------------------------------

    async def test_wire_plain_chat_usage_and_cost(self, wire: ProviderWire) -> None:
        self._need(self.can("chat"), "chat")
        rec = Recorder(wire.chat_reply("Grüezi from the wire", 1200, 340))
        provider = wire.provider(rec)
        ai = self._service(provider)
        response = await ai.call(self._request(provider, "Say hello"))
        assert response.content == "Grüezi from the wire", (
            f"{response.model}: answer text {response.content!r} not the vendor's"
        )
        assert (response.usage.input_tokens, response.usage.output_tokens) == (1200, 340), (
            f"{response.model}: usage {response.usage} is not the vendor's 1200 in / 340 out"
        )
        spec = ai.model_spec(response.model)
        assert spec.price_input_chf_per_mtok is not None, f"{spec.id} lists no input price"
        assert spec.price_output_chf_per_mtok is not None, f"{spec.id} lists no output price"
        # from the listed prices, per million tokens, plus the per-call fee
        expected = (
            1200 * spec.price_input_chf_per_mtok + 340 * spec.price_output_chf_per_mtok
        ) / 1_000_000 + (spec.price_per_call_chf or 0.0)
        assert response.cost_chf == pytest.approx(expected), (
            f"{spec.id}: cost {response.cost_chf} CHF for 1200 in / 340 out, listed prices "
            f"give {expected} CHF"
        )
        assert len(rec.requests) == 1, f"{len(rec.requests)} HTTP requests for one chat call"
        assert "Say hello" in rec.requests[0].content.decode(), (
            "the user message is not in the request body"
        )

    async def test_wire_tool_call_round_trip(self, wire: ProviderWire) -> None:
        self._need(self.can("chat") and self.can("tools"), "tools")
        from nyla.models.ai import Message, Role

        rec = Recorder(
            wire.tool_call_reply("call_w1", "get_weather", '{"city": "Bern"}'),
            wire.chat_reply("It is sunny in Bern.", 80, 9),
        )
        provider = wire.provider(rec)
        ai = self._service(provider)
        first = await ai.call(self._request(provider, "Weather in Bern?", tools=self._tools()))
        assert [(c.id, c.name) for c in first.tool_calls] == [("call_w1", "get_weather")]
        assert json.loads(first.tool_calls[0].arguments) == {"city": "Bern"}, (
            f"tool arguments {first.tool_calls[0].arguments!r} changed on the way"
        )
        sent_tools = rec.requests[0].content.decode()
        assert "get_weather" in sent_tools and "city" in sent_tools, (
            "the tool definition is not in the request body"
        )
        messages = [
            *_user("Weather in Bern?"),
            Message(role=Role.ASSISTANT, tool_calls=first.tool_calls),
            Message(role=Role.TOOL, tool_call_id="call_w1", content="sunny, 21 C"),
        ]
        req = self._request(provider, "", tools=self._tools()).model_copy(
            update={"messages": messages}
        )
        final = await ai.call(req)
        assert final.content == "It is sunny in Bern.", (
            f"answer after the tool result: {final.content!r}"
        )
        assert wire.tool_result_in(rec.requests[1], "call_w1") == "sunny, 21 C"

    async def test_wire_streaming_text(self, wire: ProviderWire) -> None:
        self._need(self.can("chat") and self.can("streaming"), "streaming")
        rec = Recorder(wire.stream_reply(["Hel", "lo ", "Zür", "ich"], 42, 4))
        provider = wire.provider(rec)
        ai = self._service(provider)
        deltas = [d async for d in ai.stream(self._request(provider, "Greet"))]
        texts = [d.text for d in deltas if d.kind == "text"]
        assert "".join(texts) == "Hello Zürich" and len(texts) >= 2, (
            f"streamed text deltas {texts} do not reassemble to the vendor's"
        )
        done = deltas[-1]
        assert done.kind == "done", f"the stream ends with {done.kind!r}, not done"
        assert (done.usage.input_tokens, done.usage.output_tokens) == (42, 4), (
            f"streamed usage {done.usage} is not the vendor's 42 in / 4 out"
        )
        assert done.response.content == "Hello Zürich", (
            "the final response of the stream lacks the full text"
        )

    async def test_wire_streamed_tool_call_reassembled(self, wire: ProviderWire) -> None:
        self._need(
            self.can("chat") and self.can("streaming") and self.can("tools"),
            "streamed tool calls",
        )
        rec = Recorder(
            wire.stream_tool_call_reply("call_s1", "get_weather", ['{"ci', 'ty": "Ba', 'sel"}'])
        )
        provider = wire.provider(rec)
        ai = self._service(provider)
        req = self._request(provider, "Weather?", tools=self._tools())
        deltas = [d async for d in ai.stream(req)]
        calls = [d.tool_call for d in deltas if d.kind == "tool_call"]
        assert [(c.id, c.name) for c in calls] == [("call_s1", "get_weather")]
        assert json.loads(calls[0].arguments) == {"city": "Basel"}, (
            f"streamed tool arguments reassembled as {calls[0].arguments!r}"
        )
        assert deltas[-1].kind == "done", f"the stream ends with {deltas[-1].kind!r}, not done"
        assert deltas[-1].response.tool_calls == calls, (
            "the final response lacks the streamed tool calls"
        )

    async def test_wire_malformed_tool_arguments_kept_as_error(self, wire: ProviderWire) -> None:
        self._need(self.can("chat") and self.can("tools"), "tools")
        broken = '{"city": "Bern"'
        if self.malformed_arguments_via == "stream":
            rec = Recorder(wire.stream_tool_call_reply("call_m1", "get_weather", [broken]))
        else:
            rec = Recorder(wire.tool_call_reply("call_m1", "get_weather", broken))
        provider = wire.provider(rec)
        ai = self._service(provider)
        req = self._request(provider, "Weather?", tools=self._tools())
        if self.malformed_arguments_via == "stream":
            deltas = [d async for d in ai.stream(req)]
            response = deltas[-1].response
        else:
            response = await ai.call(req)
        assert [c.id for c in response.tool_calls] == ["call_m1"], (
            "a tool call with malformed arguments was dropped"
        )
        assert response.tool_calls[0].arguments == broken, (
            "malformed tool arguments were altered instead of kept"
        )
        errors = response.invalid_tool_arguments
        assert errors and errors[0].id == "call_m1" and "invalid JSON" in errors[0].error, (
            f"malformed arguments not reported: {errors}"
        )

    async def test_wire_image_input(self, wire: ProviderWire) -> None:
        """A model declaring ``vision`` gets the image of a user message in its request."""
        self._need(self.can("chat") and self.can("vision"), "vision")
        from nyla.models.ai import AiCallRequest, ImagePart, Message, Role, TextPart

        rec = Recorder(wire.chat_reply("A single pixel.", 90, 5))
        provider = wire.provider(rec)
        ai = self._service(provider)
        vision = [
            s.id
            for s in provider.models()
            if s.capabilities.vision and self.chat_operation in s.operation_types and s.available
        ]
        assert vision, f"no available {self.chat_operation} model declaring vision"
        content = [TextPart(text="What is this?"), ImagePart(data_base64=PNG_1X1)]
        request = AiCallRequest(
            operation=self.chat_operation,
            model=vision[0],
            messages=[Message(role=Role.USER, content=content)],
        )
        response = await ai.call(request)
        assert response.content == "A single pixel.", f"{vision[0]}: {response.content!r}"
        body = rec.requests[0].content.decode()
        assert PNG_1X1 in body, f"{vision[0]}: the image is not in the request body"

    # ---- failures -------------------------------------------------------------------------

    async def test_wire_401_names_the_variable(self, wire: ProviderWire) -> None:
        self._need(self.has_wire, "an HTTP API")
        self._need(self.can("chat") or self.can("embeddings") or self.can("web_search"), "calls")
        from nyla.errors import ProviderAuthError

        rec = Recorder(wire.error_reply(401))
        provider = wire.provider(rec)
        ai = self._service(provider)
        with pytest.raises(ProviderAuthError) as info:
            await self._any_call(ai, provider)
        assert len(rec.requests) == 1, "an auth error must not be retried"
        if self.auth_env_var:
            assert info.value.env_var == self.auth_env_var, (
                f"the auth error names {info.value.env_var!r}, not {self.auth_env_var}"
            )
            assert self.auth_env_var in str(info.value), (
                f"the auth error message does not name {self.auth_env_var}: {info.value}"
            )

    async def _any_call(self, ai: Any, provider: Any) -> Any:
        if self.can("chat"):
            return await ai.call(self._request(provider, "hi", allow_fallback=False))
        if self.can("web_search"):
            model = self._model(provider, "webSearch", self.search_model)
            return await ai.web_search("zurich weather", model=model, allow_fallback=False)
        model = self._model(provider, "embedding", self.embedding_model)
        return await ai.embed(["hello"], model=model)

    def _ok_reply(self, wire: ProviderWire) -> Any:
        if self.can("chat"):
            return wire.chat_reply("after waiting", 10, 3)
        if self.can("web_search"):
            return wire.search_reply([{"url": "https://example.org", "title": "t", "content": "c"}])
        return lambda request: wire.embedding_reply(request, self._dims(wire))

    def _dims(self, wire: ProviderWire) -> int:
        provider = wire.provider(Recorder())
        spec = next(
            s
            for s in provider.models()
            if s.id == self._model(provider, "embedding", self.embedding_model)
        )
        return spec.capabilities.embedding_dimensions

    async def test_wire_429_retry_after_then_success(self, wire: ProviderWire) -> None:
        self._need(self.has_wire, "an HTTP API")
        self._need(self.can("chat") or self.can("web_search") or self.can("embeddings"), "calls")
        rec = Recorder(wire.error_reply(429, retry_after=3), self._ok_reply(wire))
        provider = wire.provider(rec)
        ai = self._service(provider)
        result = await self._any_call(ai, provider)
        assert result, "no result after the 429 was waited out"
        assert len(rec.requests) == 2, f"{len(rec.requests)} requests for 429 then success (want 2)"
        assert len(ai.sleeps.delays) == 1 and 3.0 <= ai.sleeps.delays[0] <= 4.0, (
            f"waited {ai.sleeps.delays} for Retry-After: 3"
        )

    async def test_wire_500_repeated_falls_back(self, wire: ProviderWire) -> None:
        self._need(self.can("chat"), "chat")
        from nyla.testing.scripted import ScriptedProvider

        rec = Recorder(wire.error_reply(500))
        provider = wire.provider(rec)
        backup = ScriptedProvider(lambda r, i: "from the backup", id="backup")
        # every other model of the failing endpoint fails too; the backup ranks last
        ai = self._service(provider, backup, settings={"max_fallbacks": 100})
        response = await ai.call(self._request(provider, "hi"))
        assert response.content == "from the backup", (
            f"no fallback to the backup model: {response.content!r}"
        )
        assert response.model == "backup:model", f"answered by {response.model}, not the backup"
        fallbacks = response.fallbacks
        assert fallbacks[0].model == self._request(provider, "x").model
        assert fallbacks[0].error_type == "ProviderServerError", (
            f"a 500 was recorded as {fallbacks[0].error_type}"
        )
        assert len(rec.requests) == ai.retry.max_attempts * len(fallbacks), (
            f"{len(rec.requests)} requests for {len(fallbacks)} failing models"
        )
        assert len(ai.sleeps.delays) == (ai.retry.max_attempts - 1) * len(fallbacks), (
            f"backoff waits {ai.sleeps.delays}"
        )

    async def test_wire_timeout_is_typed(self, wire: ProviderWire) -> None:
        self._need(self.has_wire, "an HTTP API")
        self._need(self.can("chat") or self.can("web_search") or self.can("embeddings"), "calls")
        import httpx

        from nyla.errors import ProviderTimeoutError

        def slow(request: Any) -> Any:
            raise httpx.ReadTimeout("read timed out", request=request)

        rec = Recorder(slow)
        provider = wire.provider(rec)
        ai = self._service(provider)
        with pytest.raises(ProviderTimeoutError):
            await self._any_call(ai, provider)
        assert len(rec.requests) == ai.retry.max_attempts, (
            f"{len(rec.requests)} requests on timeouts, want {ai.retry.max_attempts}"
        )

    # ---- embeddings and search ------------------------------------------------------------

    async def test_embeddings_dimension_order_and_batching(self, wire: Any) -> None:
        self._need(self.can("embeddings"), "embeddings")
        texts = [f"document number {i} about invoices" for i in range(7)]
        rec = None
        if isinstance(wire, ProviderWire):
            dims = self._dims(wire)
            rec = Recorder(lambda request: wire.embedding_reply(request, dims))
            provider = wire.provider(rec)
        else:
            provider = wire
        ai = self._service(provider, settings={"embed_batch_size": 3})
        model = self._model(provider, "embedding", self.embedding_model)
        spec = ai.model_spec(model)
        result = await ai.embed(texts, model=model)
        assert len(result.vectors) == 7, f"{len(result.vectors)} vectors for 7 texts"
        assert result.dimensions == spec.capabilities.embedding_dimensions, (
            f"{model}: {result.dimensions} dimensions, the spec declares {spec.capabilities.embedding_dimensions}"
        )
        assert all(len(v) == result.dimensions for v in result.vectors), (
            f"{model}: vectors of different lengths"
        )
        if rec is not None:
            assert len(rec.requests) == 3, (
                f"{len(rec.requests)} requests for 7 texts in batches of 3 (want 3)"
            )
        single = await ai.embed([texts[4]], model=model)
        assert single.vectors[0] == pytest.approx(result.vectors[4]), (
            f"{model}: a text embedded alone differs from the same text in a batch (order lost?)"
        )
        assert result.vectors[0] != pytest.approx(result.vectors[1]), (
            f"{model}: different texts got the same vector"
        )

    async def test_web_search_hits(self, wire: ProviderWire) -> None:
        self._need(self.can("web_search"), "web search")
        hits = [
            {"url": "https://example.org/a", "title": "A", "content": "alpha", "score": 0.9},
            {"url": "https://example.org/b", "title": "B", "content": "beta", "score": 0.5},
        ]
        rec = Recorder(wire.search_reply(hits))
        provider = wire.provider(rec)
        ai = self._service(provider)
        model = self._model(provider, "webSearch", self.search_model)
        result = await ai.web_search("swiss vat rate", model=model, max_results=2)
        assert [(h.url, h.title, h.content) for h in result] == [
            ("https://example.org/a", "A", "alpha"),
            ("https://example.org/b", "B", "beta"),
        ], "web search hits differ from the vendor's"
        assert result[0].score == pytest.approx(0.9), (
            f"the first hit's score {result[0].score} is not the vendor's 0.9"
        )
        assert "swiss vat rate" in rec.requests[0].content.decode(), (
            "the query is not in the request body"
        )
