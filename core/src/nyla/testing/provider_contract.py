"""Contract suite for model provider plugins.

A provider's test module subclasses :class:`ProviderContract`, overrides the ``plugin``
fixture (the plugin module) and, for the wire tests, the ``wire`` fixture: a
:class:`ProviderWire` that builds the provider over an ``httpx.MockTransport`` and shapes
answers as the vendor's public API documents them. Every wire test runs the real provider
code (its SDK or httpx client) through the real AI service, so conversion, error mapping,
retries, fallback and cost are tested together.

Capability flags (``supports_*``) switch tests off for what a provider does not offer; the
guard in :class:`~nyla.testing.contract_base.ContractSuite` forbids deleting or overriding a
contract test without an ``xfail`` reason.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

import pytest

from nyla.checks import check_model_spec
from nyla.testing.contract_base import PluginContract, _host_for

Handler = Callable[[Any], Any]  # httpx.Request -> httpx.Response


class ProviderWire:
    """A vendor-shaped fake of one provider's HTTP API. Override every method the provider's
    capabilities need; each returns an ``httpx.Response`` with the vendor's documented body."""

    def provider(self, handler: Handler) -> Any:
        """The provider under test, configured with a (fake) key and its HTTP client over
        ``httpx.MockTransport(handler)``."""
        raise NotImplementedError

    def chat_reply(self, text: str, input_tokens: int, output_tokens: int) -> Any:
        """A non-streamed answer with ``text`` and that usage."""
        raise NotImplementedError

    def tool_call_reply(self, call_id: str, name: str, arguments: str) -> Any:
        """A non-streamed answer asking for one tool call (``arguments`` verbatim)."""
        raise NotImplementedError

    def tool_result_in(self, request: Any, call_id: str) -> str | None:
        """The tool result for ``call_id`` as the provider sent it in ``request``."""
        raise NotImplementedError

    def stream_reply(self, chunks: list[str], input_tokens: int, output_tokens: int) -> Any:
        """A streamed answer delivering ``chunks`` of text, then the usage."""
        raise NotImplementedError

    def stream_tool_call_reply(self, call_id: str, name: str, argument_chunks: list[str]) -> Any:
        """A streamed answer with one tool call whose JSON arguments arrive in pieces."""
        raise NotImplementedError

    def error_reply(self, status: int, retry_after: float | None = None) -> Any:
        """An error answer with the vendor's error body (and ``Retry-After`` when given)."""
        raise NotImplementedError

    def embedding_reply(self, request: Any, dimensions: int) -> Any:
        """An embeddings answer for the texts in ``request``: each vector must be a
        deterministic function of its text (use :func:`fake_vector`)."""
        raise NotImplementedError

    def search_reply(self, hits: list[dict[str, Any]]) -> Any:
        """A web search answer with ``hits`` (``url``, ``title``, ``content``, ``score``)."""
        raise NotImplementedError


def fake_vector(text: str, dimensions: int) -> list[float]:
    """A deterministic stand-in vector for ``text`` (for wire fakes of embedding APIs)."""
    import hashlib

    seed = hashlib.sha256(text.encode("utf-8")).digest()
    return [((seed[i % len(seed)] + i) % 97) / 97.0 for i in range(dimensions)]


class Recorder:
    """Wraps a sequence of answers as a MockTransport handler and records the requests."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        index = min(len(self.requests), len(self.answers)) - 1
        answer = self.answers[index]
        return answer(request) if callable(answer) else answer


class _Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


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


class ProviderContract(PluginContract):
    """Contract for model provider plugins. Override ``plugin`` and, for the wire tests,
    ``wire`` (a :class:`ProviderWire`)."""

    supports_chat: bool = True
    supports_tools: bool = True
    supports_streaming: bool = True
    supports_embeddings: bool = False
    supports_web_search: bool = False
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
        if operation == "agent" and self.supports_tools:
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
            pytest.skip(f"the provider does not support {what}")

    # ---- discovery ------------------------------------------------------------------------

    def test_models_are_complete(self, plugin: Any) -> None:
        host = _host_for(plugin)
        assert host.providers, "no provider registered"
        for pid, provider in host.providers.items():
            specs = provider.models()
            assert specs, f"provider {pid} lists no models"
            for spec in specs:
                assert check_model_spec(spec, pid) == []

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
            host = _host_for(plugin)
            specs = [s for p in host.providers.values() for s in p.models()]
            assert specs and all(not s.available for s in specs)
            assert all(variable in (s.unavailable_reason or "") for s in specs)
        finally:
            config.reload()

    # ---- chat -----------------------------------------------------------------------------

    async def test_wire_plain_chat_usage_and_cost(self, wire: ProviderWire) -> None:
        self._need(self.supports_chat, "chat")
        rec = Recorder(wire.chat_reply("Grüezi from the wire", 1200, 340))
        provider = wire.provider(rec)
        ai = self._service(provider)
        response = await ai.call(self._request(provider, "Say hello"))
        assert response.content == "Grüezi from the wire"
        assert (response.usage.input_tokens, response.usage.output_tokens) == (1200, 340)
        spec = ai.model_spec(response.model)
        expected = spec.cost_chf(response.usage) + (spec.price_per_call_chf or 0.0)
        assert response.cost_chf == pytest.approx(expected)
        if spec.price_input_chf_per_mtok:
            assert response.cost_chf > 0
        assert len(rec.requests) == 1
        assert "Say hello" in rec.requests[0].content.decode()

    async def test_wire_tool_call_round_trip(self, wire: ProviderWire) -> None:
        self._need(self.supports_chat and self.supports_tools, "tools")
        from nyla.models.ai import Message, Role

        rec = Recorder(
            wire.tool_call_reply("call_w1", "get_weather", '{"city": "Bern"}'),
            wire.chat_reply("It is sunny in Bern.", 80, 9),
        )
        provider = wire.provider(rec)
        ai = self._service(provider)
        first = await ai.call(self._request(provider, "Weather in Bern?", tools=self._tools()))
        assert [(c.id, c.name) for c in first.tool_calls] == [("call_w1", "get_weather")]
        assert json.loads(first.tool_calls[0].arguments) == {"city": "Bern"}
        sent_tools = rec.requests[0].content.decode()
        assert "get_weather" in sent_tools and "city" in sent_tools
        messages = [
            *_user("Weather in Bern?"),
            Message(role=Role.ASSISTANT, tool_calls=first.tool_calls),
            Message(role=Role.TOOL, tool_call_id="call_w1", content="sunny, 21 C"),
        ]
        req = self._request(provider, "", tools=self._tools()).model_copy(
            update={"messages": messages}
        )
        final = await ai.call(req)
        assert final.content == "It is sunny in Bern."
        assert wire.tool_result_in(rec.requests[1], "call_w1") == "sunny, 21 C"

    async def test_wire_streaming_text(self, wire: ProviderWire) -> None:
        self._need(self.supports_chat and self.supports_streaming, "streaming")
        rec = Recorder(wire.stream_reply(["Hel", "lo ", "Zür", "ich"], 42, 4))
        provider = wire.provider(rec)
        ai = self._service(provider)
        deltas = [d async for d in ai.stream(self._request(provider, "Greet"))]
        texts = [d.text for d in deltas if d.kind == "text"]
        assert "".join(texts) == "Hello Zürich" and len(texts) >= 2
        done = deltas[-1]
        assert done.kind == "done"
        assert (done.usage.input_tokens, done.usage.output_tokens) == (42, 4)
        assert done.metadata["response"].content == "Hello Zürich"

    async def test_wire_streamed_tool_call_reassembled(self, wire: ProviderWire) -> None:
        self._need(
            self.supports_chat and self.supports_streaming and self.supports_tools,
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
        assert json.loads(calls[0].arguments) == {"city": "Basel"}
        assert deltas[-1].kind == "done"
        assert deltas[-1].metadata["response"].tool_calls == calls

    async def test_wire_malformed_tool_arguments_kept_as_error(self, wire: ProviderWire) -> None:
        self._need(self.supports_chat and self.supports_tools, "tools")
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
            response = deltas[-1].metadata["response"]
        else:
            response = await ai.call(req)
        assert [c.id for c in response.tool_calls] == ["call_m1"]
        assert response.tool_calls[0].arguments == broken
        errors = response.metadata["invalidToolArguments"]
        assert errors[0]["id"] == "call_m1" and "invalid JSON" in errors[0]["error"]

    # ---- failures -------------------------------------------------------------------------

    async def test_wire_401_names_the_variable(self, wire: ProviderWire) -> None:
        self._need(self.has_wire, "an HTTP API")
        self._need(
            self.supports_chat or self.supports_embeddings or self.supports_web_search, "calls"
        )
        from nyla.errors import ProviderAuthError

        rec = Recorder(wire.error_reply(401))
        provider = wire.provider(rec)
        ai = self._service(provider)
        with pytest.raises(ProviderAuthError) as info:
            await self._any_call(ai, provider)
        assert len(rec.requests) == 1, "an auth error must not be retried"
        if self.auth_env_var:
            assert info.value.env_var == self.auth_env_var
            assert self.auth_env_var in str(info.value)

    async def _any_call(self, ai: Any, provider: Any) -> Any:
        if self.supports_chat:
            return await ai.call(self._request(provider, "hi", allow_fallback=False))
        if self.supports_web_search:
            model = self._model(provider, "webSearch", self.search_model)
            return await ai.web_search("zurich weather", model=model, allow_fallback=False)
        model = self._model(provider, "embedding", self.embedding_model)
        return await ai.embed(["hello"], model=model)

    def _ok_reply(self, wire: ProviderWire) -> Any:
        if self.supports_chat:
            return wire.chat_reply("after waiting", 10, 3)
        if self.supports_web_search:
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
        self._need(
            self.supports_chat or self.supports_web_search or self.supports_embeddings, "calls"
        )
        rec = Recorder(wire.error_reply(429, retry_after=3), self._ok_reply(wire))
        provider = wire.provider(rec)
        ai = self._service(provider)
        result = await self._any_call(ai, provider)
        assert result
        assert len(rec.requests) == 2
        assert len(ai.sleeps.delays) == 1 and 3.0 <= ai.sleeps.delays[0] <= 4.0

    async def test_wire_500_repeated_falls_back(self, wire: ProviderWire) -> None:
        self._need(self.supports_chat, "chat")
        from nyla.testing.scripted import ScriptedProvider

        rec = Recorder(wire.error_reply(500))
        provider = wire.provider(rec)
        backup = ScriptedProvider(lambda r, i: "from the backup", id="backup")
        # every other model of the failing endpoint fails too; the backup ranks last
        ai = self._service(provider, backup, settings={"max_fallbacks": 100})
        response = await ai.call(self._request(provider, "hi"))
        assert response.content == "from the backup"
        assert response.model == "backup:model"
        fallbacks = response.metadata["fallbacks"]
        assert fallbacks[0]["model"] == self._request(provider, "x").model
        assert fallbacks[0]["errorType"] == "ProviderServerError"
        assert len(rec.requests) == ai.retry.max_attempts * len(fallbacks)
        assert len(ai.sleeps.delays) == (ai.retry.max_attempts - 1) * len(fallbacks)

    async def test_wire_timeout_is_typed(self, wire: ProviderWire) -> None:
        self._need(self.has_wire, "an HTTP API")
        self._need(
            self.supports_chat or self.supports_web_search or self.supports_embeddings, "calls"
        )
        import httpx

        from nyla.errors import ProviderTimeoutError

        def slow(request: Any) -> Any:
            raise httpx.ReadTimeout("read timed out", request=request)

        rec = Recorder(slow)
        provider = wire.provider(rec)
        ai = self._service(provider)
        with pytest.raises(ProviderTimeoutError):
            await self._any_call(ai, provider)
        assert len(rec.requests) == ai.retry.max_attempts

    # ---- embeddings and search ------------------------------------------------------------

    async def test_embeddings_dimension_order_and_batching(self, wire: Any) -> None:
        self._need(self.supports_embeddings, "embeddings")
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
        assert len(result.vectors) == 7
        assert result.dimensions == spec.capabilities.embedding_dimensions
        assert all(len(v) == result.dimensions for v in result.vectors)
        if rec is not None:
            assert len(rec.requests) == 3  # 3 + 3 + 1
        single = await ai.embed([texts[4]], model=model)
        assert single.vectors[0] == pytest.approx(result.vectors[4])
        assert result.vectors[0] != pytest.approx(result.vectors[1])

    async def test_web_search_hits(self, wire: ProviderWire) -> None:
        self._need(self.supports_web_search, "web search")
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
        ]
        assert result[0].score == pytest.approx(0.9)
        assert "swiss vat rate" in rec.requests[0].content.decode()


def _sse(events: list[Any], *, done: bool = True, named: bool = False) -> Any:
    import httpx

    lines = []
    for event in events:
        if named:
            name, data = event
            lines.append(f"event: {name}\ndata: {json.dumps(data)}\n\n")
        else:
            lines.append(f"data: {json.dumps(event)}\n\n")
    if done:
        lines.append("data: [DONE]\n\n")
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content="".join(lines).encode()
    )


def sse_response(events: list[Any], *, done: bool = True, named: bool = False) -> Any:
    """An ``httpx.Response`` streaming ``events`` as server-sent events (``named``: a list of
    ``(event, data)`` pairs, as Anthropic sends them; ``done``: end with ``data: [DONE]``)."""
    return _sse(events, done=done, named=named)


class OpenAIWire(ProviderWire):
    """The OpenAI chat-completions / embeddings wire format as the OpenAI API reference shows
    it; vendors speaking the same format (Perplexity, Mistral, Ollama, vLLM) subclass it and
    override :meth:`provider` (and :meth:`completion` for their extras)."""

    model_name = "model"

    def completion(self, message: dict[str, Any], finish: str, usage: tuple[int, int]) -> dict:
        """The body of a non-streamed chat completion."""
        return {
            "id": "chatcmpl-123",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": self.model_name,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": usage[0] + usage[1],
            },
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict:
        """One streamed ``chat.completion.chunk``."""
        return {
            "id": "chatcmpl-123",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": self.model_name,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    def usage_chunk(self, usage: tuple[int, int]) -> dict:
        """The last chunk with ``stream_options.include_usage``: no choices, only usage."""
        return {
            "id": "chatcmpl-123",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": self.model_name,
            "choices": [],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": usage[0] + usage[1],
            },
        }

    def chat_reply(self, text: str, input_tokens: int, output_tokens: int) -> Any:
        import httpx

        message = {"role": "assistant", "content": text, "refusal": None}
        return httpx.Response(
            200, json=self.completion(message, "stop", (input_tokens, output_tokens))
        )

    def tool_call_reply(self, call_id: str, name: str, arguments: str) -> Any:
        import httpx

        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        }
        return httpx.Response(200, json=self.completion(message, "tool_calls", (50, 12)))

    def tool_result_in(self, request: Any, call_id: str) -> str | None:
        body = json.loads(request.content)
        for m in body.get("messages", []):
            if m.get("role") == "tool" and m.get("tool_call_id") == call_id:
                content = m.get("content")
                if isinstance(content, list):
                    return "".join(p.get("text", "") for p in content)
                return content
        return None

    def stream_reply(self, chunks: list[str], input_tokens: int, output_tokens: int) -> Any:
        events = [self.chunk({"role": "assistant", "content": ""})]
        events += [self.chunk({"content": c}) for c in chunks]
        events.append(self.chunk({}, "stop"))
        events.append(self.usage_chunk((input_tokens, output_tokens)))
        return _sse(events)

    def stream_tool_call_reply(self, call_id: str, name: str, argument_chunks: list[str]) -> Any:
        first = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
            ],
        }
        events = [self.chunk(first)]
        events += [
            self.chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in argument_chunks
        ]
        events.append(self.chunk({}, "tool_calls"))
        events.append(self.usage_chunk((30, 8)))
        return _sse(events)

    def error_body(self, status: int) -> dict:
        """The vendor's error body for ``status``."""
        kinds = {
            401: (
                "Incorrect API key provided: sk-test.",
                "invalid_request_error",
                "invalid_api_key",
            ),
            429: ("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
        }
        message, kind, code = kinds.get(status, ("The server had an error.", "server_error", None))
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    def error_reply(self, status: int, retry_after: float | None = None) -> Any:
        import httpx

        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        return httpx.Response(status, json=self.error_body(status), headers=headers)

    def embedding_reply(self, request: Any, dimensions: int) -> Any:
        import base64
        import struct

        import httpx

        body = json.loads(request.content)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]

        def encode(vector: list[float]) -> Any:
            # with encoding_format=base64 the API sends little-endian float32 bytes
            if body.get("encoding_format") == "base64":
                return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            return vector

        return httpx.Response(
            200,
            json={
                "object": "list",
                "data": [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": encode(fake_vector(t, dimensions)),
                    }
                    for i, t in enumerate(texts)
                ],
                "model": body.get("model", self.model_name),
                "usage": {"prompt_tokens": 5 * len(texts), "total_tokens": 5 * len(texts)},
            },
        )


def sdk_transport(handler: Handler) -> Any:
    """A mock transport for a vendor SDK's own HTTP client (``httpx2`` in current SDKs) that
    hands each request to the httpx ``handler`` the wire fakes are written against."""
    import httpx

    from nyla.sdk.http import _sdk_httpx

    flavour = _sdk_httpx()
    if flavour is httpx:  # pragma: no cover - older SDK generations
        return httpx.MockTransport(handler)

    def handle(request: Any) -> Any:
        mirrored = httpx.Request(
            request.method,
            str(request.url),
            headers=list(request.headers.multi_items()),
            content=request.read(),
        )
        try:
            response = handler(mirrored)
        except httpx.TimeoutException as exc:
            raise flavour.ReadTimeout(str(exc), request=request) from exc
        except httpx.TransportError as exc:
            raise flavour.ConnectError(str(exc), request=request) from exc
        return flavour.Response(
            response.status_code,
            headers=list(response.headers.multi_items()),
            content=response.read(),
        )

    return flavour.MockTransport(handle)
