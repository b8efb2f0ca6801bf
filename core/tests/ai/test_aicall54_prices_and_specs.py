"""The budget's estimate and a call's cost are made from a model's prices directly, and the AI
service's model chains read the plugin host's specs as one kept tuple: the same numbers, the
same models, as before (issue 32 goal 1)."""

from __future__ import annotations

import itertools
import math
from typing import Any, NamedTuple, cast

import pytest

from nyla import config
from nyla.ai.pricing import DEFAULT_OUTPUT_ESTIMATE, call_cost_chf, estimate_cost_chf, preflight
from nyla.ai.scripted import ScriptedPlugin, ScriptedProvider
from nyla.ai.service import AiService
from nyla.errors import BudgetExceeded
from nyla.models.ai import ModelSpec, OperationType, Usage
from nyla.plugins import PluginHost


class _Planned(NamedTuple):
    """The usage the estimate assumed before (read by ``ModelSpec.cost_chf``)."""

    input_tokens: int
    output_tokens: int
    characters: int = 0
    audio_seconds: float = 0.0


def _spec(**prices: Any) -> ModelSpec:
    return ModelSpec(
        id="p:m",
        provider="p",
        name="m",
        operation_types=[OperationType.AGENT],
        context_window=100_000,
        max_output_tokens=prices.pop("max_output_tokens", 4096),
        **prices,
    )


def _old_tokens(spec: ModelSpec, usage: Any) -> float | None:
    """The cost as ``ModelSpec.cost_chf`` computed it."""
    if spec.price_input_chf_per_mtok is None or spec.price_output_chf_per_mtok is None:
        return None
    return (
        usage.input_tokens * spec.price_input_chf_per_mtok
        + usage.output_tokens * spec.price_output_chf_per_mtok
        + usage.characters * (spec.price_per_million_chars_chf or 0.0)
    ) / 1_000_000 + usage.audio_seconds / 60 * (spec.price_per_audio_minute_chf or 0.0)


def _old_cost(spec: ModelSpec, usage: Any) -> float | None:
    """The old ``call_cost_chf``: that plus the per-call fee."""
    tokens = _old_tokens(spec, usage)
    return None if tokens is None else tokens + (spec.price_per_call_chf or 0.0)


PRICES = [None, 0.0, 0.15, 2.5, 15.0, 1e-9, math.inf]
FEES = [None, 0.0, 0.01]


def _specs() -> list[ModelSpec]:
    out = []
    for p_in, p_out, fee, chars, audio in itertools.product(
        PRICES, PRICES[:4], FEES, [None, 16.0, math.inf], [None, 0.006]
    ):
        out.append(
            _spec(
                price_input_chf_per_mtok=p_in,
                price_output_chf_per_mtok=p_out,
                price_per_call_chf=fee,
                price_per_million_chars_chf=chars,
                price_per_audio_minute_chf=audio,
                max_output_tokens=700 if fee == 0.0 else 4096,
            )
        )
    return out


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return (math.isnan(a) and math.isnan(b)) or (
        a == b and math.copysign(1, a) == math.copysign(1, b)
    )


@pytest.mark.parametrize("input_tokens", [0, 1, 937, 123_456])
@pytest.mark.parametrize("max_output", [None, 0, 1, 250, 5000])
def test_the_estimate_is_the_planned_usage_at_the_models_prices(input_tokens, max_output) -> None:
    for spec in _specs():
        output = max_output
        if output is None:
            output = min(spec.max_output_tokens, DEFAULT_OUTPUT_ESTIMATE)
        old = _old_cost(spec, _Planned(input_tokens, output))
        assert _same(estimate_cost_chf(spec, input_tokens, max_output), old), spec
        usage = Usage(input_tokens=input_tokens, output_tokens=output)
        assert _same(estimate_cost_chf(spec, input_tokens, max_output), call_cost_chf(spec, usage))
        # and what the old estimate gave through the spec's own cost_chf
        planned = cast(Usage, _Planned(input_tokens, output))
        assert _same(spec.cost_chf(planned), _old_tokens(spec, planned))


def test_a_calls_cost_reads_every_part_of_its_usage() -> None:
    usages = [
        Usage(input_tokens=100, output_tokens=20),
        Usage(input_tokens=0, output_tokens=0),
        Usage(input_tokens=5, output_tokens=7, characters=1234),
        Usage(input_tokens=5, output_tokens=7, audio_seconds=42.5),
        Usage(input_tokens=3, output_tokens=0, characters=9, audio_seconds=0.25),
    ]
    for spec, usage in itertools.product(_specs(), usages):
        assert _same(call_cost_chf(spec, usage), _old_cost(spec, usage)), (spec, usage)
        assert _same(spec.cost_chf(usage), _old_tokens(spec, usage))


def test_the_budget_preflight_still_fails_closed_and_on_the_estimate() -> None:
    priced = _spec(price_input_chf_per_mtok=2.0, price_output_chf_per_mtok=10.0)
    # 1000 in, 1000 out (the default reply length): 0.002 + 0.01
    assert preflight(priced, 1000, None, None) == pytest.approx(0.012)
    assert preflight(priced, 1000, None, 0.012) == pytest.approx(0.012)
    with pytest.raises(BudgetExceeded) as raised:
        preflight(priced, 1000, None, 0.0119)
    assert raised.value.estimated_chf == pytest.approx(0.012)
    unpriced = _spec(price_input_chf_per_mtok=None, price_output_chf_per_mtok=1.0)
    assert preflight(unpriced, 1000, None, None) is None
    with pytest.raises(BudgetExceeded, match="no known price"):
        preflight(unpriced, 1000, None, 5.0)


class _Counting(ScriptedProvider):
    def __init__(self, **kw: Any) -> None:
        super().__init__(lambda request, index: "ok", **kw)
        self.listed = 0

    def models(self) -> list[Any]:
        self.listed += 1
        return super().models()


def test_the_hosts_specs_are_one_kept_tuple_until_something_changes(monkeypatch) -> None:
    first, second = _Counting(id="first"), _Counting(id="second")
    host = PluginHost.from_plugins([ScriptedPlugin(first, second)])
    specs = host.model_specs()
    assert isinstance(specs, tuple)
    assert host.model_specs() is specs  # the same object: the chains compare at once
    assert host.models() == list(specs) and host.models() is not host.models()
    assert [s.id for s in specs] == ["first:model", "second:model"]
    listed = first.listed
    monkeypatch.setenv("NYLA_TEST_AICALL54", "changed")  # a setting changed: asked again
    again = host.model_specs()
    assert again is not specs and first.listed == listed + 1
    assert [s.id for s in again] == [s.id for s in specs]
    config.reload()
    assert host.model_specs() is not again
    # a provider that opts out is asked every time, and the tuple is new every time
    second.models_cacheable = False  # type: ignore[attr-defined]
    monkeypatch.delenv("NYLA_TEST_AICALL54")
    assert host.model_specs() is not host.model_specs()


def test_the_service_chain_sees_a_changed_provider_list_at_once() -> None:
    """A provider registered after a call is in the next call's specs (the kept tuple is
    keyed by the providers), and a provider dropped is gone."""
    host = PluginHost.from_plugins([ScriptedPlugin(_Counting(id="a"))])
    service = AiService(host)
    chain = service.chains.chain_for(OperationType.AGENT, None, None, window=10, limit=3)
    assert [s.id for s in chain] == ["a:model"]
    host.add_plugin(ScriptedPlugin(_Counting(id="b", quality_rank=90)), "late")
    chain = service.chains.chain_for(OperationType.AGENT, None, None, window=10, limit=3)
    assert [s.id for s in chain] == ["b:model", "a:model"]
    assert service.select_model(OperationType.AGENT).id == "b:model"
    assert [s.id for s in service.models()] == ["a:model", "b:model"]


class _Rules:
    """Access rules as the service reads them: one rule for the user ``bound``."""

    def __init__(self, rule: Any) -> None:
        self.bound = rule

    async def rule(self, user_id: str | None, mandate_id: str | None) -> Any:
        return self.bound if user_id == "bound" else None


async def test_a_routes_rule_is_the_one_read_for_its_user_and_mandate() -> None:
    from nyla.ai.access_rule import AccessRule
    from nyla.models.agent import RunContext

    rule = AccessRule(provider_lists=(), model_lists=(("a:model",),), source="test")
    host = PluginHost.from_plugins([ScriptedPlugin(_Counting(id="a"), _Counting(id="b"))])
    service = AiService(host, access=cast(Any, _Rules(rule)))
    free, bound = RunContext(user_id="free"), RunContext(user_id="bound")
    with pytest.raises(RuntimeError, match="was not read"):
        service._rule(free)
    await service._govern(free)
    await service._govern(bound)
    assert service._rule(free) is None  # read, and no rule: not the unread error
    assert service._rule(bound) is rule
    with pytest.raises(RuntimeError, match="was not read"):
        service._rule(RunContext(user_id="free", mandate_id="m"))
    assert service.select_model(OperationType.AGENT, context=free).id in {"a:model", "b:model"}


@pytest.mark.parametrize(
    ("reported", "estimated"),
    [((0, 0), True), ((5, 0), False), ((0, 3), False), ((100, 20), False)],
)
async def test_usage_is_estimated_only_when_the_provider_reports_no_token(
    reported: tuple[int, int], estimated: bool
) -> None:
    from nyla.models.ai import AiCallRequest, ChatResponse, Message, Role

    usage = Usage(input_tokens=reported[0], output_tokens=reported[1])
    provider = ScriptedProvider(lambda request, index: ChatResponse(content="ok", usage=usage))
    service = AiService(PluginHost.from_plugins([ScriptedPlugin(provider)]))
    request = AiCallRequest(
        operation=OperationType.AGENT, messages=[Message(role=Role.USER, content="hello there")]
    )
    response = await service.call(request)
    assert response.usage_estimated is estimated
    if estimated:
        assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    else:
        assert response.usage == usage


def test_a_traced_calls_operation_is_its_plain_value() -> None:
    """What ``report_call`` names a call's operation (``str`` of the request's operation)
    is the enum's value, a plain ``str``, for every operation."""
    for operation in OperationType:
        named = str(operation)
        assert named == operation.value and type(named) is str
