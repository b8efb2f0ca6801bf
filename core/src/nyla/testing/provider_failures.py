"""Failure, embedding and web search tests of the provider contract: auth errors name the
variable, 429 waits out ``Retry-After``, repeated 5xx falls back, timeouts are typed,
embeddings keep dimension and order, web search hits are the vendor's."""

from __future__ import annotations

from typing import Any

import pytest

from nyla.testing.provider_base import ProviderContractBase
from nyla.testing.provider_wire import ProviderWire, Recorder


class FailureTests(ProviderContractBase):
    """The failure, embedding and web search part of the provider contract."""

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
