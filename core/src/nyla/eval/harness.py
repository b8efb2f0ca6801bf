"""The benchmark harness (seeds: Eval-Harness): every question of a feature, in every mode,
through the feature data agent; scored and aggregated into a report.

Modes (seeds' table):

========  =========  =========  ==============================================
mode      validator  ontology   prompt block
========  =========  =========  ==============================================
baseline  off        off        the feature's legacy domain hints
phase1    on         off        domain hints + validator (suffix convention)
phase2    on         on         compiled ontology + validator (its constraints)
========  =========  =========  ==============================================
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import Field

from nyla.ai.recording import recording_key
from nyla.errors import ConfigurationError, ModelNotAvailableError
from nyla.eval.scoring import score
from nyla.features.data_agent import FeatureAgentResult
from nyla.features.service import ontology_disabled
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.base import WireModel
from nyla.models.feature import BenchmarkQuestion, Feature

if TYPE_CHECKING:
    from nyla.eval.policies import PolicyHost
    from nyla.features.service import FeatureService
    from nyla.models.ai import ModelSpec

MODES: dict[str, tuple[bool, bool]] = {
    # mode: (validator, ontology)
    "baseline": (False, False),
    "phase1": (True, False),
    "phase2": (True, True),
}
DEFAULT_CONCURRENCY = 4
DEFAULT_MAX_ROUNDS = 12


class ModelSpecs(Protocol):
    """The AI service as the harness reads it: a model's spec (price, availability)."""

    def model_spec(self, model_id: str) -> ModelSpec | None: ...


class EvalKernel(Protocol):
    """What the harness uses of the kernel (the kernel is one): the AI service's model specs,
    the feature service whose data agent answers, the plugin host for scripted policies."""

    @property
    def ai(self) -> ModelSpecs: ...

    @property
    def features(self) -> FeatureService: ...

    @property
    def plugins(self) -> PolicyHost: ...


class QuestionResult(WireModel):
    """One question in one mode."""

    id: str
    mode: str
    question: str
    pattern: str | None = None
    tags: list[str] = Field(default_factory=list)
    answer: str = ""
    status: str = ""
    pattern_ok: bool = False
    forbid_ok: bool = False
    numeric_ok: bool = False
    accuracy_ok: bool = False
    expected_numbers: list[float] = Field(default_factory=list)
    found_numbers: list[float] = Field(default_factory=list)
    rounds: int = 0
    cost_chf: float = 0.0
    validation_failures: int = 0
    repair_attempts: int = 0
    success_after_repair: int = 0
    rejections: int = 0
    repaired_rejections: int = 0
    rejection_codes: list[str] = Field(default_factory=list)
    calls: list[dict[str, Any]] = Field(default_factory=list)
    run_id: str | None = None
    error: str | None = None


class ModeSummary(WireModel):
    """Aggregates of one mode.

    ``validator_rejects``: validation failures reported by the runs' ``AGENT_SUMMARY``.
    ``repairs``: rejections followed by a successful table-tool call in the same run;
    ``repair_conversion_rate`` = repairs / rejects (``None`` without rejects).
    """

    mode: str
    questions: int = 0
    accuracy: float = 0.0
    pattern_compliance: float = 0.0
    numeric_rate: float = 0.0
    validator_rejects: int = 0
    repairs: int = 0
    repair_conversion_rate: float | None = None
    repair_attempts: int = 0
    success_after_repair: int = 0
    total_rounds: int = 0
    total_cost_chf: float = 0.0
    errors: int = 0


class EvalReport(WireModel):
    """A benchmark run: what ran, per-mode aggregates and every question's result."""

    feature: str
    model: str
    modes: list[str]
    instance_id: str
    started_at: datetime
    finished_at: datetime | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    ontology_disabled_by_env: bool = False
    #: whether the model has a price: costs are the provider's reported usage times the
    #: model's price, and a self-test policy (no price) shows no cost instead of an invented one
    cost_known: bool = True
    summaries: list[ModeSummary] = Field(default_factory=list)
    results: list[QuestionResult] = Field(default_factory=list)

    def summary(self, mode: str) -> ModeSummary:
        """The aggregates of ``mode``."""
        return next(s for s in self.summaries if s.mode == mode)


def parse_modes(value: str | list[str]) -> list[str]:
    """``"baseline,phase2"`` -> ``["baseline", "phase2"]`` (unknown modes rejected)."""
    modes = [
        m.strip() for m in (value.split(",") if isinstance(value, str) else value) if m.strip()
    ]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ConfigurationError(
            f"unknown mode(s) {', '.join(unknown) or '(none)'}; modes: {', '.join(MODES)}"
        )
    return modes


def check_model(kernel: EvalKernel, model: str) -> None:
    """Fail before the first question when ``model`` is unknown or its provider says it is
    unavailable (a missing key), instead of recording the same error for every run."""
    spec = kernel.ai.model_spec(model)
    if spec is None:
        raise ModelNotAvailableError(f"unknown model {model!r}: `nyla models` lists the models")
    if not spec.available:
        raise ModelNotAvailableError(f"model {model} is not available: {spec.unavailable_reason}")


def _priced(kernel: EvalKernel, model: str) -> bool:
    """Whether ``model`` has input and output prices (else its report shows no cost)."""
    spec = kernel.ai.model_spec(model)
    return bool(
        spec is not None
        and spec.price_input_chf_per_mtok is not None
        and spec.price_output_chf_per_mtok is not None
    )


def summarize(mode: str, results: list[QuestionResult]) -> ModeSummary:
    """Aggregate the results of one mode."""
    n = len(results)
    rejects = sum(r.validation_failures for r in results)
    repairs = sum(r.repaired_rejections for r in results)
    return ModeSummary(
        mode=mode,
        questions=n,
        accuracy=sum(r.accuracy_ok for r in results) / n if n else 0.0,
        pattern_compliance=sum(r.pattern_ok and r.forbid_ok for r in results) / n if n else 0.0,
        numeric_rate=sum(r.numeric_ok for r in results) / n if n else 0.0,
        validator_rejects=rejects,
        repairs=repairs,
        repair_conversion_rate=(repairs / rejects) if rejects else None,
        repair_attempts=sum(r.repair_attempts for r in results),
        success_after_repair=sum(r.success_after_repair for r in results),
        total_rounds=sum(r.rounds for r in results),
        total_cost_chf=round(sum(r.cost_chf for r in results), 6),
        errors=sum(1 for r in results if r.error or r.status == "error"),
    )


def _result(q: BenchmarkQuestion, mode: str, run: FeatureAgentResult) -> QuestionResult:
    s = score(q, run.answer, run.calls)
    return QuestionResult(
        **_asked(q, mode),
        answer=run.answer,
        status=run.status,
        pattern_ok=s.pattern_ok,
        forbid_ok=s.forbid_ok,
        numeric_ok=s.numeric_ok,
        accuracy_ok=s.accuracy_ok and run.completed,
        found_numbers=s.found_numbers,
        rounds=run.rounds,
        cost_chf=run.cost_chf,
        validation_failures=run.validation_failures,
        repair_attempts=run.repair_attempts,
        success_after_repair=run.success_after_repair,
        rejections=run.rejections,
        repaired_rejections=run.repaired_rejections,
        rejection_codes=[c.code for c in run.calls if c.code],
        calls=[c.to_wire() for c in run.calls],
        run_id=run.run_id,
        error=run.summary.get("error"),
    )


def _questions(feature: Feature, question_ids: list[str] | None) -> list[BenchmarkQuestion]:
    """The feature's benchmark questions, only ``question_ids`` when given (none found: an
    error naming them)."""
    questions = list(feature.benchmark_questions())
    if question_ids:
        wanted = set(question_ids)
        questions = [q for q in questions if q.id in wanted]
        if not questions:
            raise ConfigurationError(f"none of the questions {sorted(wanted)} exist")
    return questions


def _broken(q: BenchmarkQuestion, mode: str, exc: Exception) -> QuestionResult:
    """The result of a run that raised (recorded; the benchmark goes on)."""
    return QuestionResult(**_asked(q, mode), status="error", error=f"{type(exc).__name__}: {exc}")


def _asked(q: BenchmarkQuestion, mode: str) -> dict[str, Any]:
    """The fields of a result that come from the question itself."""
    return {
        "id": q.id,
        "mode": mode,
        "question": q.question,
        "pattern": q.pattern,
        "tags": list(q.tags),
        "expected_numbers": list(q.expected_numbers),
    }


async def run_eval(
    kernel: EvalKernel,
    feature_code: str,
    *,
    model: str,
    modes: Sequence[str] | str = ("baseline", "phase1", "phase2"),
    concurrency: int = DEFAULT_CONCURRENCY,
    instance_id: str | None = None,
    question_ids: list[str] | None = None,
    seed: bool = True,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    max_cost_chf: float | None = None,
    on_progress: Callable[[QuestionResult], Any] | None = None,
) -> EvalReport:
    """Run every question of ``feature_code`` in every mode against ``model``.

    The instance (``eval-<feature>`` unless given) is seeded first (``seed=False`` keeps its
    data: the expected numbers assume the feature's default seed). Questions run concurrently
    up to ``concurrency``; ``on_progress`` is called after each. An ``eval:<policy>`` model
    installs the scripted policies. A run that fails is recorded as such; the others go on.
    """
    chosen = parse_modes(list(modes) if not isinstance(modes, str) else modes)
    features = kernel.features
    questions = _questions(features.feature(feature_code), question_ids)
    if model.startswith("eval:"):
        from nyla.eval.policies import install_policies

        install_policies(kernel.plugins, questions)
    check_model(kernel, model)
    instance = instance_id or f"eval-{feature_code}"
    if seed:
        await features.seed(feature_code, instance)
    report = EvalReport(
        feature=feature_code,
        model=model,
        modes=chosen,
        instance_id=instance,
        started_at=datetime.now(UTC),
        concurrency=concurrency,
        ontology_disabled_by_env=ontology_disabled(),
        cost_known=_priced(kernel, model),
    )
    gate = asyncio.Semaphore(max(1, concurrency))
    config = AgentConfig(max_rounds=max_rounds, max_cost_chf=max_cost_chf)

    async def one(q: BenchmarkQuestion, mode: str) -> QuestionResult:
        validate, use_ontology = MODES[mode]
        async with gate:
            try:
                with recording_key(f"{mode}-{q.id}"):  # one recording per question and mode
                    run = await features.run_data_agent(
                        feature_code,
                        q.question,
                        context=RunContext(feature_instance_id=instance),
                        config=config,
                        model=model,
                        validate=validate,
                        use_ontology=use_ontology,
                    )
                result = _result(q, mode, run)
            except Exception as exc:  # one broken run never stops the benchmark
                result = _broken(q, mode, exc)
        if on_progress is not None:
            on_progress(result)
        return result

    results = await asyncio.gather(*(one(q, m) for m in chosen for q in questions))
    order = {m: i for i, m in enumerate(chosen)}
    report.results = sorted(results, key=lambda r: (order[r.mode], r.id))
    report.summaries = [summarize(m, [r for r in report.results if r.mode == m]) for m in chosen]
    report.finished_at = datetime.now(UTC)
    return report
