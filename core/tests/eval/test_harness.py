"""The harness self-test end to end (the scripted reference-replay and trap-regression
policies on the real agent loop and the seeded embedded database): the report's figures match
what each policy must produce, and a replay scores nothing on the unscripted questions."""

from __future__ import annotations

import asyncio
import json

import pytest

from nyla.errors import ConfigurationError, ModelNotAvailableError, ProviderServerError
from nyla.eval import run_eval, to_markdown, write_report
from nyla.eval.harness import parse_modes
from nyla.eval.policies import EvalPolicyPlugin, EvalPolicyProvider
from nyla.hookspecs import hookimpl

from .conftest import trustee

pytestmark = pytest.mark.db

QUESTIONS = trustee.TrusteeFeature().benchmark_questions()
N = len(QUESTIONS)


def tagged(tag: str) -> set[str]:
    return {q.id for q in QUESTIONS if tag in q.tags}


SCRIPTED = {q.id for q in QUESTIONS if q.solution}
UNSCRIPTED = {q.id for q in QUESTIONS} - SCRIPTED
SUM, PERIOD, FIELD = tagged("trap:sum-balance"), tagged("trap:period"), tagged("trap:field")
TRAPS = SUM | PERIOD | FIELD


def accurate(report, mode) -> set[str]:
    return {r.id for r in report.results if r.mode == mode and r.accuracy_ok}


async def test_reference_replay_answers_exactly_the_scripted_questions(eval_kernel, tmp_path):
    assert len(UNSCRIPTED) >= 10
    report = await run_eval(eval_kernel, "trustee", model="eval:reference-replay", concurrency=4)
    assert [s.mode for s in report.summaries] == ["baseline", "phase1", "phase2"]
    assert report.cost_known is False  # a self-test has no price: no invented cost
    scripted = [q for q in QUESTIONS if q.solution]
    for s in report.summaries:
        assert accurate(report, s.mode) == SCRIPTED  # nothing on the unscripted ones
        assert s.questions == N and s.accuracy == pytest.approx(len(SCRIPTED) / N)
        assert (s.validator_rejects, s.repairs, s.repair_conversion_rate, s.errors) == (
            0,
            0,
            None,
            0,
        )
        # a scripted question takes its steps and the answer; an unscripted one gives up at once
        assert s.total_rounds == sum(len(q.solution["steps"]) + 1 for q in scripted) + len(
            UNSCRIPTED
        )
        assert s.total_cost_chf == 0
    md, js = write_report(report, tmp_path)
    data = json.loads(js.read_text())
    assert data["costKnown"] is False and len(data["results"]) == 3 * N
    pct = f"{100 * len(SCRIPTED) / N:.1f} %"
    assert f"| phase2 | {pct} | {pct} | 0 | – |" in md.read_text()
    assert "| – |" in md.read_text().split("| phase2 |")[1].splitlines()[0]


async def test_trap_regression(eval_kernel):
    report = await run_eval(eval_kernel, "trustee", model="eval:trap-regression", concurrency=4)
    base, p1, p2 = (report.summary(m) for m in ("baseline", "phase1", "phase2"))
    all_ids = SCRIPTED  # a replay has nothing for the unscripted questions
    # baseline: no validator, every trap's wrong figure is the answer
    assert accurate(report, "baseline") == all_ids - TRAPS
    assert base.validator_rejects == 0 and base.repair_conversion_rate is None
    # phase1: the suffix convention catches summed balances, FIELD_NOT_FOUND the camelCase
    # names; the missing period filter needs the ontology
    assert accurate(report, "phase1") == all_ids - PERIOD
    assert (p1.validator_rejects, p1.repairs, p1.repair_conversion_rate) == (
        len(SUM) + len(FIELD),
        len(SUM) + len(FIELD),
        1.0,
    )
    # phase2: everything caught and repaired
    assert accurate(report, "phase2") == SCRIPTED
    assert p2.pattern_compliance == pytest.approx(len(SCRIPTED) / N)
    assert (p2.validator_rejects, p2.repairs, p2.repair_conversion_rate) == (len(TRAPS),) * 2 + (
        1.0,
    )
    # the loop's same-tool counters: queryTable -> queryTable repairs only
    assert (p2.repair_attempts, p2.success_after_repair) == (len(PERIOD | FIELD),) * 2
    codes = {c for r in report.results if r.mode == "phase2" for c in r.rejection_codes}
    assert codes == {"INVALID_AGGREGATE_TARGET", "REQUIRES_FILTER", "FIELD_NOT_FOUND"}
    # a repaired run costs a round more than the oracle's path
    by = {(r.id, r.mode): r for r in report.results}
    for qid in TRAPS:
        q = next(q for q in QUESTIONS if q.id == qid)
        assert by[(qid, "phase2")].rounds == len(q.solution["steps"]) + 2


async def test_trap_no_repair(eval_kernel, make_kernel, db):
    # the policies passed explicitly as a provider plugin instead of installed by the harness
    kernel = make_kernel(trustee, EvalPolicyPlugin(QUESTIONS), db=db, builtins=False)
    report = await run_eval(kernel, "trustee", model="eval:trap-no-repair", modes="phase1,phase2")
    p1, p2 = report.summary("phase1"), report.summary("phase2")
    all_ids = SCRIPTED  # a replay has nothing for the unscripted questions
    assert accurate(report, "phase1") == accurate(report, "phase2") == all_ids - TRAPS
    assert (p1.validator_rejects, p1.repairs, p1.repair_conversion_rate) == (
        len(SUM | FIELD),
        0,
        0.0,
    )
    assert (p2.validator_rejects, p2.repairs, p2.repair_conversion_rate) == (len(TRAPS), 0, 0.0)
    # rejected anti-patterns never reached the database, so they do not break forbidOk
    assert all(r.forbid_ok for r in report.results if r.mode == "phase2")
    text = to_markdown(report)
    assert f"| phase2 | {100 * (len(SCRIPTED) - len(TRAPS)) / N:.1f} % |" in text
    assert "## Misses" in text and "q01_bank_balance_march" in text


class FlakyPolicies(EvalPolicyProvider):
    """The oracle, except that the provider fails (HTTP 500) on one question."""

    async def chat(self, request):
        if any("Q1 2025" in m.text for m in request.messages if m.role.value == "user"):
            raise ProviderServerError("upstream exploded", provider="eval", status_code=500)
        return await super().chat(request)


async def test_a_failing_run_is_recorded_and_the_rest_goes_on(make_kernel, db):
    kernel = make_kernel(trustee, GatedPlugin(FlakyPolicies(QUESTIONS)), db=db, builtins=False)
    ids = ["q01_bank_balance_march", "q07_vat_due_q1", "q19_invoice_count_q1", "q08_vat_due_q2"]
    report = await run_eval(
        kernel, "trustee", model="eval:reference-replay", modes=["phase2"], question_ids=ids
    )
    s = report.summary("phase2")
    failed = {r.id for r in report.results if not r.accuracy_ok}
    assert failed == {"q19_invoice_count_q1"}  # the only question mentioning "Q1 2025"
    assert s.errors == 1 and s.accuracy == 0.75
    broken = next(r for r in report.results if r.id == "q19_invoice_count_q1")
    assert broken.status == "error" and "upstream exploded" in (broken.error or broken.answer)


async def test_unknown_or_unavailable_model_fails_before_running(eval_kernel):
    with pytest.raises(ModelNotAvailableError, match="unknown model"):
        await run_eval(eval_kernel, "trustee", model="nowhere:model")


def test_modes_are_checked():
    assert parse_modes("phase2, baseline") == ["phase2", "baseline"]
    with pytest.raises(ConfigurationError):
        parse_modes("phase3")


class GatedPolicies(EvalPolicyProvider):
    """The policies, but every model call waits until ``limit`` calls are in flight at once
    (a barrier): a harness that ran questions one by one would never get past it."""

    def __init__(self, questions, limit):
        super().__init__(questions)
        self.limit = limit
        self.in_flight = 0
        self.max_in_flight = 0
        self.full = asyncio.Event()

    async def chat(self, request):
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        if self.in_flight >= self.limit:
            self.full.set()
        try:
            await self.full.wait()
            return await super().chat(request)
        finally:
            self.in_flight -= 1


class GatedPlugin:
    def __init__(self, provider):
        self.provider = provider

    @hookimpl
    def nyla_providers(self):
        return [self.provider]


async def test_questions_run_concurrently_up_to_the_limit(make_kernel, db):
    gated = GatedPolicies(QUESTIONS, limit=3)
    kernel = make_kernel(trustee, GatedPlugin(gated), db=db, builtins=False)
    ids = [q.id for q in QUESTIONS[:7]]
    report = await asyncio.wait_for(  # a deadlock guard, not a timing assertion
        run_eval(
            kernel,
            "trustee",
            model="eval:reference-replay",
            modes=["phase2"],
            concurrency=3,
            question_ids=ids,
        ),
        timeout=120,
    )
    assert gated.max_in_flight == 3  # reached the limit, never exceeded it
    assert report.summary("phase2").accuracy == 1.0


async def test_a_priced_model_costs_what_its_provider_reported(make_kernel, db):
    from nyla.models.ai import ChatResponse, Usage
    from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

    usage = Usage(input_tokens=12_000, output_tokens=3_000)
    provider = ScriptedProvider(
        lambda request, index: ChatResponse(content="I do not know.", usage=usage),
        price_input=2.0,
        price_output=8.0,
    )
    kernel = make_kernel(trustee, ScriptedPlugin(provider), db=db, builtins=False)
    ids = ["q01_bank_balance_march", "q29_bank_balance_october"]
    report = await run_eval(
        kernel, "trustee", model="scripted:model", modes=["phase2"], question_ids=ids
    )
    assert report.cost_known is True
    per_call = (12_000 * 2.0 + 3_000 * 8.0) / 1e6
    calls = len(provider.requests)
    assert calls >= 2
    assert report.summary("phase2").total_cost_chf == pytest.approx(per_call * calls)
    assert report.summary("phase2").accuracy == 0.0
