"""The ranked part of a call's route is kept between calls (the rounds of a run), and a
change of anything it depends on routes the next call afresh: the window, the budget left,
the restriction (the context's, a named model, the operation's default, the access rule),
a model's availability and its price."""

from __future__ import annotations

import os
from typing import Any

import pytest

from nyla.ai.retry import RetryPolicy
from nyla.errors import BudgetExceeded, ModelAccessDenied
from nyla.models.agent import RunContext
from nyla.models.ai import AiCallRequest, Message, ModelSpec, OperationType, Role
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider


def service(kernel: Any) -> Any:
    from nyla.ai.service import AiService

    return AiService(kernel.plugins, kernel.settings.get("ai"), retry=RetryPolicy())


def ask(text: str = "hi", **kw: Any) -> AiCallRequest:
    return AiCallRequest(
        operation=OperationType.AGENT, messages=[Message(role=Role.USER, content=text)], **kw
    )


def answering(name: str, **kw: Any) -> ScriptedProvider:
    return ScriptedProvider(lambda r, i: name, id=name, **kw)


@pytest.fixture
def pair(make_kernel) -> tuple[Any, ScriptedProvider, ScriptedProvider]:
    """A service over ``best`` (ranked first) and ``next``."""
    best, nxt = answering("best", quality_rank=90), answering("next", quality_rank=50)
    return service(make_kernel(ScriptedPlugin(best, nxt), builtins=False)), best, nxt


async def test_a_run_s_rounds_rank_the_models_once(pair, monkeypatch) -> None:
    ai, _best, _next = pair
    ranked = []
    original = ai.selector.ranked
    monkeypatch.setattr(ai.selector, "ranked", lambda q: ranked.append(q) or original(q))
    context = RunContext(workflow_id="run-1")
    for text in ("round one", "round two, a longer prompt", "round three"):
        assert (await ai.call(ask(text, context=context))).model == "best:model"
    assert len(ranked) == 1


async def test_a_prompt_past_the_kept_model_s_window_goes_to_the_next(make_kernel) -> None:
    small = answering("small", quality_rank=90, context_window=2_000)
    large = answering("large", quality_rank=50)
    ai = service(make_kernel(ScriptedPlugin(small, large), builtins=False))
    assert (await ai.call(ask("short", max_output_tokens=100))).model == "small:model"
    assert (await ai.call(ask("word " * 3_000, max_output_tokens=100))).model == "large:model"
    assert (await ai.call(ask("short again", max_output_tokens=100))).model == "small:model"


async def test_a_budget_left_below_the_estimate_is_refused_after_a_kept_route(pair) -> None:
    ai, best, _next = pair
    assert (await ai.call(ask(max_cost_chf=1.0))).model == "best:model"
    with pytest.raises(BudgetExceeded):
        await ai.call(ask(max_cost_chf=1e-9))
    assert len(best.requests) == 1


async def test_a_change_of_the_context_s_restriction_reroutes(pair) -> None:
    ai, _best, _next = pair
    assert (await ai.call(ask(context=RunContext()))).model == "best:model"
    narrow = RunContext(allowed_providers=["next"])
    assert (await ai.call(ask(context=narrow))).model == "next:model"
    listed = RunContext(allowed_models=["next:model"])
    assert (await ai.call(ask(context=listed))).model == "next:model"
    assert (await ai.call(ask(context=RunContext()))).model == "best:model"


async def test_a_restriction_changed_in_place_reroutes(pair) -> None:
    ai, _best, _next = pair
    context = RunContext(workflow_id="run-1", allowed_providers=["best", "next"])
    assert (await ai.call(ask(context=context))).model == "best:model"
    context.allowed_providers.remove("best")  # the same context and list, changed in place
    assert (await ai.call(ask(context=context))).model == "next:model"
    context.allowed_providers = None
    context.allowed_models = ["next:model"]
    assert (await ai.call(ask(context=context))).model == "next:model"
    context.allowed_models.append("best:model")
    assert (await ai.call(ask(context=context))).model == "best:model"


async def test_a_named_model_and_a_changed_default_reroute(pair, monkeypatch) -> None:
    ai, _best, _next = pair
    assert (await ai.call(ask())).model == "best:model"
    assert (await ai.call(ask(model="next:model"))).model == "next:model"
    monkeypatch.setenv("NYLA_MODEL_AGENT", "next:model")
    assert (await ai.call(ask())).model == "next:model"
    monkeypatch.delenv("NYLA_MODEL_AGENT")
    ai.settings["default_models"] = {"agent": "next:model"}  # changed in place
    assert (await ai.call(ask())).model == "next:model"
    ai.settings["default_models"] = {}
    assert (await ai.call(ask())).model == "best:model"


async def test_a_setting_changed_during_a_call_is_read_by_the_next(
    make_kernel, monkeypatch
) -> None:
    from nyla.config import settings_fingerprint
    from nyla.errors import ProviderError

    inside: list[tuple[int, int]] = []

    def best_script(request: Any, index: int) -> str:
        before = settings_fingerprint()
        monkeypatch.setenv("NYLA_MODEL_AGENT", "next:model")  # changed while the call runs
        inside.append(settings_fingerprint())
        assert inside[-1] == before  # one fingerprint for the whole call
        if index == 1:
            raise ProviderError("refused", provider="best", retryable=False)
        return "best"

    best = ScriptedProvider(best_script, id="best", quality_rank=90)
    ai = service(
        make_kernel(ScriptedPlugin(best, answering("next", quality_rank=50)), builtins=False)
    )
    assert (await ai.call(ask())).model == "best:model"
    assert settings_fingerprint() != inside[0]  # the pin ended with the call
    assert (await ai.call(ask())).model == "next:model"  # the next call reads the change
    monkeypatch.delenv("NYLA_MODEL_AGENT")
    with pytest.raises(ProviderError):
        await ai.call(ask(model="best:model"))
    assert settings_fingerprint() != inside[1]  # ended by a failed call too
    monkeypatch.delenv("NYLA_MODEL_AGENT")
    assert (await ai.call(ask())).model == "best:model"


async def test_a_model_made_unavailable_is_not_called_again(pair) -> None:
    ai, best, _next = pair
    assert (await ai.call(ask())).model == "best:model"
    best.spec.available = False  # the spec changed in place, not handed anew
    assert (await ai.call(ask())).model == "next:model"
    assert (await ai.call(ask())).model == "next:model"
    assert len(best.requests) == 1


async def test_a_provider_s_new_spec_makes_its_model_available_again(pair, monkeypatch) -> None:
    ai, best, _next = pair
    best.spec.available = False
    assert (await ai.call(ask())).model == "next:model"
    best.spec = best.spec.model_copy(update={"available": True})
    monkeypatch.setenv("NYLA_TEST_SETTING", "changed")  # the providers are asked again
    assert (await ai.call(ask())).model == "best:model"


class PricedByEnvironment(ScriptedProvider):
    """A provider whose price is a setting: a new spec when the setting changes."""

    def models(self) -> list[ModelSpec]:
        price = float(os.environ.get("NYLA_TEST_PRICE", "1.0"))
        if price != self.spec.price_input_chf_per_mtok:
            self.spec = self.spec.model_copy(update={"price_input_chf_per_mtok": price})
        return [self.spec]


async def test_a_changed_price_reranks_the_kept_route(make_kernel, monkeypatch) -> None:
    priced = PricedByEnvironment(lambda r, i: "priced", id="priced", price_input=1.0)
    fixed = answering("fixed", price_input=2.0)
    ai = service(make_kernel(ScriptedPlugin(priced, fixed), builtins=False))
    # same quality and speed: the cheaper one first
    assert (await ai.call(ask())).model == "priced:model"
    monkeypatch.setenv("NYLA_TEST_PRICE", "5.0")
    assert (await ai.call(ask())).model == "fixed:model"
    monkeypatch.setenv("NYLA_TEST_PRICE", "0.5")
    assert (await ai.call(ask())).model == "priced:model"


@pytest.mark.db
async def test_a_changed_access_rule_reroutes(make_kernel, db) -> None:
    best, nxt = answering("best", quality_rank=90), answering("next", quality_rank=50)
    kernel = make_kernel(ScriptedPlugin(best, nxt), db=db, builtins=False)
    alice = RunContext(user_id="alice", mandate_id="m1")
    assert (await kernel.ai.call(ask(context=alice))).model == "best:model"
    await kernel.model_access.set_providers("mandate", "m1", ["next"])
    assert (await kernel.ai.call(ask(context=alice))).model == "next:model"
    with pytest.raises(ModelAccessDenied):
        await kernel.ai.call(ask(context=alice, model="best:model"))
    await kernel.model_access.set_providers("mandate", "m1", [])
    assert (await kernel.ai.call(ask(context=alice))).model == "best:model"


def test_billing_and_the_price_preflight_share_one_estimate(monkeypatch) -> None:
    from nyla.ai import route as route_module
    from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession
    from nyla.ai.route import Route

    made = []
    original = route_module.estimate_cost_chf
    monkeypatch.setattr(
        route_module, "estimate_cost_chf", lambda *a: made.append(a) or original(*a)
    )
    first, second = answering("first").spec, answering("second").spec
    gate = NeutralizationGate([])
    route = Route([first, second], 1_000, 100, 1.0, NeutralizationSession(), gate)
    admitted = route.estimate(first)  # billing's preflight (AiPipeline._admit)
    walked = list(route.models())
    assert walked[0] == (first, admitted) and walked[1][0] is second
    assert admitted == original(first, 1_000, 100)
    assert [a[0] for a in made] == [first, second]
    with pytest.raises(BudgetExceeded):
        next(Route([first], 1_000, 100, 1e-12, NeutralizationSession(), gate).models())


@pytest.mark.parametrize(
    "prices",
    [
        {"price_input_chf_per_mtok": 2.5, "price_output_chf_per_mtok": 10.0},
        {
            "price_input_chf_per_mtok": 1.0,
            "price_output_chf_per_mtok": 4.0,
            "price_per_call_chf": 0.002,
            "price_per_million_chars_chf": 15.0,
            "price_per_audio_minute_chf": 0.006,
        },
        {"price_input_chf_per_mtok": None, "price_output_chf_per_mtok": 4.0},
    ],
)
def test_the_estimate_is_the_cost_of_the_usage_it_assumes(prices) -> None:
    from nyla.ai.pricing import DEFAULT_OUTPUT_ESTIMATE, call_cost_chf, estimate_cost_chf
    from nyla.models.ai import Usage

    spec = answering("priced").spec.model_copy(update={**prices, "max_output_tokens": 4_096})
    for output, assumed in ((None, DEFAULT_OUTPUT_ESTIMATE), (300, 300)):
        usage = Usage(input_tokens=12_345, output_tokens=assumed)
        assert estimate_cost_chf(spec, 12_345, output) == call_cost_chf(spec, usage)
    if prices["price_input_chf_per_mtok"] is not None:
        assert estimate_cost_chf(spec, 12_345, 300) > estimate_cost_chf(spec, 12_345, 200)


@pytest.mark.parametrize(
    ("operation", "what", "message"),
    [
        (OperationType.AGENT, "model", "no model fits the remaining budget"),
        (OperationType.IMAGE_GENERATE, "image model", "no image model fits the remaining budget"),
    ],
)
def test_a_route_holds_its_operation_and_what_to_say_when_nothing_fits(
    make_kernel, operation, what, message
) -> None:
    """The route is made from positional values (see AiPipeline._route): each lands in its
    own field, the rest keep their defaults (fails when the operation and the message swap
    or the operation is the enum, not its value)."""
    from dataclasses import fields

    from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession

    spec = answering("best").spec
    ai = service(make_kernel(ScriptedPlugin(answering("best")), builtins=False))
    ai.chains.chain_for = lambda *a, **kw: [spec]
    session, gate = NeutralizationSession(), NeutralizationGate([])
    route = ai._route(
        operation, None, input_tokens=12, session=session, gate=gate, budget=0.5, what=what
    )
    assert type(route.operation) is str and route.operation == operation.value
    assert route.exhausted_message == message and str(route.exhausted()) == message
    assert (route.chain, route.input_tokens, route.max_output, route.budget) == (
        [spec],
        12,
        None,
        0.5,
    )
    assert route.session is session and route.gate is gate
    defaults = {f.name: f.default for f in fields(route)}
    for name in ("retries", "last_error", "hold", "admitted_chf", "estimated"):
        assert getattr(route, name) == defaults[name]
    assert route.fallbacks == [] and route.started_ns > 0
