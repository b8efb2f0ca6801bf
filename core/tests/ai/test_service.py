"""The AI service pipeline over scripted providers: selection, budget, retries, fallback,
streaming, embeddings, totals."""

from __future__ import annotations

from typing import Any

import pytest

import nyla
import nyla.host
from nyla.ai.neutralize import NeutralizationSession
from nyla.ai.retry import RetryPolicy
from nyla.errors import (
    BudgetExceeded,
    ModelNotAvailableError,
    ProviderAuthError,
    ProviderRateLimitError,
    ProviderServerError,
)
from nyla.models.agent import RunContext
from nyla.models.ai import (
    AiCallRequest,
    Message,
    OperationType,
    Role,
    ToolDefinition,
)
from nyla.models.model_query import ModelQuery
from nyla.models.neutralize import Finding
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider


def user(text: str) -> list[Message]:
    return [Message(role=Role.USER, content=text)]


class Sleeps:
    """A sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def service(kernel: Any, sleeps: Sleeps | None = None) -> Any:
    from nyla.ai.service import AiService

    return AiService(
        kernel.plugins, kernel.settings.get("ai"), retry=RetryPolicy(sleep=sleeps or Sleeps())
    )


class EmailFinder:
    id = "test-email"

    def find(self, text: str) -> list[Finding]:
        import re

        return [
            Finding(start=m.start(), end=m.end(), category="EMAIL", value=m.group(0))
            for m in re.finditer(r"\S+@\S+\.\w+", text)
        ]


class NeutralizerPlugin:
    def __init__(self, *neutralizers: Any) -> None:
        self.items = list(neutralizers)

    @nyla.hookimpl
    def nyla_neutralizers(self) -> list[Any]:
        return self.items


async def test_call_selects_best_ranked_model_and_prices_usage(make_kernel) -> None:
    cheap = ScriptedProvider(lambda r, i: "cheap", id="a", price_input=1.0, price_output=1.0)
    good = ScriptedProvider(lambda r, i: "good", id="b", price_input=2.0, price_output=4.0)
    good.spec.quality_rank = 90
    kernel = make_kernel(ScriptedPlugin(cheap, good), builtins=False)
    ai = service(kernel)
    response = await ai.call(AiCallRequest(operation=OperationType.AGENT, messages=user("hi")))
    assert response.content == "good"
    assert response.model == "b:model"
    expected = (response.usage.input_tokens * 2.0 + response.usage.output_tokens * 4.0) / 1e6
    assert response.cost_chf == pytest.approx(expected)
    assert ai.totals().calls == 1
    assert ai.totals().cost_chf == pytest.approx(expected)


async def test_explicit_model_overrides_and_context_restricts(make_kernel) -> None:
    a = ScriptedProvider(lambda r, i: "a", id="a")
    b = ScriptedProvider(lambda r, i: "b", id="b")
    b.spec.quality_rank = 99
    ai = service(make_kernel(ScriptedPlugin(a, b), builtins=False))
    r = await ai.call(AiCallRequest(operation="agent", messages=user("x"), model="a:model"))
    assert r.content == "a"
    ctx = RunContext(allowed_providers=["a"])
    assert ai.select_model("agent", context=ctx).id == "a:model"
    with pytest.raises(ModelNotAvailableError, match="not allowed"):
        ai.select_model("agent", context=ctx, model="b:model")
    with pytest.raises(ModelNotAvailableError, match="unknown model"):
        ai.select_model("agent", model="nope:x")
    with pytest.raises(ModelNotAvailableError, match="context window"):
        ai.select_model("agent", estimated_tokens=10_000_000)


async def test_budget_preflight_refuses_and_unknown_price_fails_closed(make_kernel) -> None:
    priced = ScriptedProvider(lambda r, i: "x", id="p", price_input=1000.0, price_output=1000.0)
    unpriced = ScriptedProvider(lambda r, i: "x", id="u", price_input=None, price_output=None)
    ai = service(make_kernel(ScriptedPlugin(priced, unpriced), builtins=False))
    req = AiCallRequest(operation="agent", messages=user("hello " * 50), max_cost_chf=0.0001)
    with pytest.raises(BudgetExceeded) as info:
        await ai.call(req.model_copy(update={"model": "p:model"}))
    assert info.value.estimated_chf > info.value.remaining_chf == 0.0001
    with pytest.raises(BudgetExceeded, match="no known price"):
        await ai.call(req.model_copy(update={"model": "u:model", "max_cost_chf": 100.0}))
    assert priced.requests == [] and unpriced.requests == []
    # without a budget the unpriced model is allowed and costs are marked unknown
    r = await ai.call(AiCallRequest(operation="agent", messages=user("x"), model="u:model"))
    assert r.price_unknown is True and r.cost_chf == 0.0


async def test_rate_limit_is_retried_honouring_retry_after(make_kernel) -> None:
    def script(request, index):
        if index < 2:
            raise ProviderRateLimitError("slow down", retry_after=7.0, provider="s")
        return "finally"

    sleeps = Sleeps()
    provider = ScriptedProvider(script, id="s")
    ai = service(make_kernel(ScriptedPlugin(provider), builtins=False), sleeps)
    r = await ai.call(AiCallRequest(operation="agent", messages=user("x")))
    assert r.content == "finally"
    assert len(provider.requests) == 3
    assert len(sleeps.delays) == 2 and all(7.0 <= d <= 7.5 for d in sleeps.delays)
    assert r.retries == 2 and r.fallbacks == []


async def test_repeated_server_errors_fall_back_to_next_model(make_kernel) -> None:
    def broken(request, index):
        raise ProviderServerError("overloaded", provider="a", status_code=529)

    a = ScriptedProvider(broken, id="a")
    a.spec.quality_rank = 99
    b = ScriptedProvider(lambda r, i: "from b", id="b")
    sleeps = Sleeps()
    ai = service(make_kernel(ScriptedPlugin(a, b), builtins=False), sleeps)
    r = await ai.call(AiCallRequest(operation="agent", messages=user("x")))
    assert r.content == "from b" and r.model == "b:model"
    assert [f.model for f in r.fallbacks] == ["a:model"]
    assert r.fallbacks[0].error_type == "ProviderServerError"
    assert r.to_wire()["fallbacks"][0]["errorType"] == "ProviderServerError"
    assert len(a.requests) == 3  # max_attempts
    # backoff is jittered exponential: within [0, base * 2**n]
    assert len(sleeps.delays) == 2
    assert 0 <= sleeps.delays[0] <= 0.5 and 0 <= sleeps.delays[1] <= 1.0


async def test_auth_error_is_not_retried_nor_hidden(make_kernel) -> None:
    def denied(request, index):
        raise ProviderAuthError("bad key", env_var="A_KEY", provider="a", status_code=401)

    a = ScriptedProvider(denied, id="a")
    a.spec.quality_rank = 99
    b = ScriptedProvider(lambda r, i: "b", id="b")
    ai = service(make_kernel(ScriptedPlugin(a, b), builtins=False))
    with pytest.raises(ProviderAuthError) as info:
        await ai.call(AiCallRequest(operation="agent", messages=user("x")))
    assert info.value.env_var == "A_KEY"
    assert len(a.requests) == 1 and b.requests == []


async def test_unexpected_provider_exception_becomes_provider_error(make_kernel) -> None:
    def bug(request, index):
        raise KeyError("choices")

    ai = service(make_kernel(ScriptedPlugin(ScriptedProvider(bug, id="a")), builtins=False))
    with pytest.raises(nyla.ProviderError, match="KeyError"):
        await ai.call(AiCallRequest(operation="agent", messages=user("x")))


async def test_stream_yields_text_tool_calls_and_done_with_response(make_kernel) -> None:
    def script(request, index):
        seen = request.messages[0].text.split()[-1]  # what the model sees for the address
        if index == 0:
            return [("lookup", {"q": f"mail {seen}"})]
        return f"write to {seen} now"

    provider = ScriptedProvider(script, id="s")
    kernel = make_kernel(ScriptedPlugin(provider), NeutralizerPlugin(EmailFinder()), builtins=False)
    ai = service(kernel)
    session = NeutralizationSession()
    tools = [ToolDefinition(name="lookup", description="d", parameters={"type": "object"})]
    req = AiCallRequest(
        operation="agent",
        messages=user("my mail is bob@example.com"),
        tools=tools,
        neutralization=session,
    )
    first = [d async for d in ai.stream(req)]
    assert [d.kind for d in first] == ["tool_call", "done"]
    assert first[0].tool_call.arguments == '{"q": "mail bob@example.com"}'  # restored for tools
    second = [d async for d in ai.stream(req)]
    assert second[-1].kind == "done"
    text = "".join(d.text for d in second if d.kind == "text")
    assert text == "write to bob@example.com now"
    final = second[-1].response
    assert final.content == text and final.usage == second[-1].usage
    assert final.cost_chf > 0
    # the model only ever saw the placeholder
    for request in provider.requests:
        assert "bob@example.com" not in request.model_dump_json()
        assert "[EMAIL_1]" in request.messages[0].text


async def test_stream_falls_back_before_first_delta(make_kernel) -> None:
    def broken(request, index):
        raise ProviderServerError("down", provider="a", status_code=503)

    a = ScriptedProvider(broken, id="a")
    a.spec.quality_rank = 99
    b = ScriptedProvider(lambda r, i: "hello there", id="b")
    ai = service(make_kernel(ScriptedPlugin(a, b), builtins=False))
    deltas = [d async for d in ai.stream(AiCallRequest(operation="agent", messages=user("x")))]
    assert "".join(d.text for d in deltas) == "hello there"
    response = deltas[-1].response
    assert [f.model for f in response.fallbacks] == ["a:model"]
    assert "response" not in deltas[-1].metadata  # the typed field, no string key


async def test_embed_batches_in_order_and_prices(make_kernel) -> None:
    batches: list[int] = []

    def embed_fn(texts: list[str]) -> list[list[float]]:
        batches.append(len(texts))
        return [[float(len(t)), 1.0] for t in texts]

    provider = ScriptedProvider(lambda r, i: "", id="e", embed_fn=embed_fn)
    provider.spec.capabilities.max_batch_size = 3
    ai = service(make_kernel(ScriptedPlugin(provider), builtins=False))
    batches.clear()
    texts = ["a" * n for n in range(1, 8)]
    result = await ai.embed(texts)
    assert [v[0] for v in result.vectors] == [float(n) for n in range(1, 8)]
    assert batches == [3, 3, 1]
    assert result.dimensions == 2 and result.model == "e:model"
    assert result.cost_chf == pytest.approx(result.usage.input_tokens * 1.0 / 1e6)
    assert (await ai.embed([])).vectors == []


class ImageProvider(ScriptedProvider):
    def __init__(self, fail_times: int = 0, **kw: Any) -> None:
        super().__init__(lambda r, i: "", operations=[OperationType.IMAGE_GENERATE], **kw)
        self.prompts: list[str] = []
        self.fail_times = fail_times

    async def generate_image(self, model: str, prompt: str, *, size: str = "1024x1024"):
        from nyla.models.ai import ImagePart

        self.prompts.append(prompt)
        if len(self.prompts) <= self.fail_times:
            raise ProviderServerError("busy", provider=self.id, status_code=503)
        return [ImagePart(data_base64="aGk=")]


async def test_generate_image_neutralizes_prompt_and_retries(make_kernel) -> None:
    provider = ImageProvider(fail_times=1, id="img")
    kernel = make_kernel(ScriptedPlugin(provider), NeutralizerPlugin(EmailFinder()))
    ai = service(kernel)
    images = await ai.generate_image("a poster for bob@example.com")
    assert images[0].data_base64 == "aGk="
    assert provider.prompts == ["a poster for [EMAIL_1]"] * 2
    assert ai.totals().calls == 1 and ai.totals().cost_chf > 0


def test_exports_for_plugin_authors() -> None:
    from nyla.ai.neutralize import NeutralizationSession

    assert nyla.host.NeutralizationSession is NeutralizationSession
    assert nyla.AiCallRequest is AiCallRequest
    assert callable(nyla.host.config_value)


def test_selector_ranks_by_quality_speed_then_price_and_respects_tools(make_kernel) -> None:
    a = ScriptedProvider(lambda r, i: "", id="a", price_input=5.0, price_output=5.0)
    b = ScriptedProvider(lambda r, i: "", id="b", price_input=1.0, price_output=1.0)
    c = ScriptedProvider(lambda r, i: "", id="c")
    c.spec.quality_rank, c.spec.capabilities.tools = 99, False
    ai = service(make_kernel(ScriptedPlugin(a, b, c), builtins=False))
    assert ai.select_model("agent").id == "c:model"
    assert ai.select_model("agent", needs_tools=True).id == "b:model"  # same ranks: cheaper
    with pytest.raises(ModelNotAvailableError, match="no model for operation 'embedding'"):
        ai.select_model("embedding")


def test_a_limited_chain_is_the_head_of_the_whole_one(make_kernel) -> None:
    providers = [ScriptedProvider(lambda r, i: "", id=name) for name in "abcde"]
    for rank, provider in enumerate(providers):
        provider.spec.quality_rank = rank
    providers[4].spec.context_window = 10
    ai = service(make_kernel(ScriptedPlugin(*providers), builtins=False))

    def query(**kw: Any) -> ModelQuery:
        return ModelQuery.for_call("agent", estimated_tokens=100, **kw)

    whole = ai.selector.candidates(query())
    assert [s.id[0] for s in whole] == ["d", "c", "b", "a"]  # e is too small
    for limit in (1, 2, 4, 9):
        assert ai.selector.candidates(query(limit=limit)) == whole[:limit]
    pinned = ai.selector.candidates(query(model="b:model", limit=2))
    assert [s.id[0] for s in pinned] == ["b", "d"]


async def test_fallback_that_does_not_fit_the_budget_is_skipped(make_kernel) -> None:
    def broken(request, index):
        raise ProviderServerError("down", provider="a", status_code=502)

    a = ScriptedProvider(broken, id="a", price_input=0.0, price_output=0.0)
    a.spec.quality_rank = 99
    pricey = ScriptedProvider(lambda r, i: "never", id="b", price_input=1e6, price_output=1e6)
    ai = service(make_kernel(ScriptedPlugin(a, pricey), builtins=False))
    with pytest.raises(ProviderServerError):
        await ai.call(AiCallRequest(operation="agent", messages=user("x"), max_cost_chf=0.01))
    assert pricey.requests == []


async def test_what_the_service_adds_is_typed_and_camel_case_on_the_wire(make_kernel) -> None:
    from nyla.models.ai import ChatResponse, ToolCall

    def script(request, index):
        return ChatResponse(
            tool_calls=[
                ToolCall(id="ok", name="lookup", arguments='{"q": 1}'),
                ToolCall(id="bad", name="lookup", arguments='{"q": '),
                ToolCall(id="list", name="lookup", arguments="[1, 2]"),
            ],
            metadata={"citations": ["https://example.ch"]},
        )

    kernel = make_kernel(ScriptedPlugin(ScriptedProvider(script, id="s")), builtins=False)
    tools = [ToolDefinition(name="lookup", description="d", parameters={"type": "object"})]
    response = await service(kernel).call(
        AiCallRequest(operation="agent", messages=user("go"), tools=tools)
    )
    assert [(i.id, i.error) for i in response.invalid_tool_arguments] == [
        ("bad", "invalid JSON: JSONDecodeError"),
        ("list", "arguments are not a JSON object"),
    ]
    assert [c.arguments for c in response.tool_calls][1] == '{"q": '  # kept verbatim
    assert response.usage_estimated is True and response.price_unknown is False
    assert response.retries == 0 and response.fallbacks == []
    assert response.neutralization.placeholders == 0
    wire = response.to_wire()
    assert wire["invalidToolArguments"][0] == {
        "id": "bad",
        "name": "lookup",
        "error": "invalid JSON: JSONDecodeError",
    }
    assert wire["usageEstimated"] is True and "usage_estimated" not in wire
    # metadata is the provider's own, passed through; nothing of the service's in it
    assert response.metadata == {"citations": ["https://example.ch"]}


def test_a_tool_charges_the_run_only_inside_one() -> None:
    from nyla.models.tools import ToolContext

    charged: list[float] = []
    ToolContext(on_charge=charged.append).charge(0.25)
    ToolContext(on_charge=charged.append).charge(None)
    ToolContext().charge(1.0)  # outside a run: nothing to charge, no error
    assert charged == [0.25]


async def test_totals_are_kept_per_run_and_for_everything(make_kernel) -> None:
    provider = ScriptedProvider(lambda r, i: "x", id="p", price_input=1.0, price_output=1.0)
    ai = service(make_kernel(ScriptedPlugin(provider), builtins=False))
    for workflow in ("w1", "w1", None, "w2"):
        context = RunContext(workflow_id=workflow)
        await ai.call(AiCallRequest(operation="agent", messages=user("hi"), context=context))
    assert (ai.totals("w1").calls, ai.totals("w2").calls, ai.totals().calls) == (2, 1, 4)
    assert ai.totals("w3").calls == 0
    every = ai.totals()
    assert every.cost_chf == pytest.approx(sum(ai.totals(w).cost_chf for w in ("w1", "w2")) * 4 / 3)
    assert every.input_tokens == ai.totals("w1").input_tokens * 2
