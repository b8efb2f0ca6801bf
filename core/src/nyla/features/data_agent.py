"""The feature data sub-agent (seeds: ``runFeatureDataAgent``): the agent loop with the three
table tools of one feature instance and the feature's schema prompt.

It inherits what its parent has left — rounds, budget, identity, model restriction,
``require_neutralization`` (through the run context) and the placeholder session; a feature
whose data requires neutralisation (``Feature.requires_neutralization``) turns it on for the
sub-agent whatever the parent does — and reports its repair telemetry
(``validation_failures``, ``repair_attempts``, ``success_after_repair``) from the loop's
``AGENT_SUMMARY``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nyla.errors import ConfigurationError
from nyla.models.agent import AgentConfig, AgentEvent, EventType, RunContext
from nyla.models.tools import ToolResult

if TYPE_CHECKING:
    from nyla.features.ports import AgentLoop, FeatureTables
    from nyla.models.tool_services import PlaceholderSession

#: Rounds of a data agent run when its caller sets no limit.
DEFAULT_MAX_ROUNDS = 12


@dataclass
class RecordedCall:
    """One table-tool call as the data agent made it (arguments as the model sent them)."""

    tool: str
    arguments: dict[str, Any]
    success: bool
    code: str | None = None
    content: str = ""

    def to_wire(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "arguments": self.arguments,
            "success": self.success,
            "code": self.code,
        }


@dataclass
class FeatureAgentResult:
    """What a data agent run produced: the answer, its end state, cost and repair telemetry,
    the calls it made and every event."""

    answer: str
    status: str
    run_id: str | None
    rounds: int
    cost_chf: float
    validation_failures: int
    repair_attempts: int
    success_after_repair: int
    calls: list[RecordedCall] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    events: list[AgentEvent] = field(default_factory=list)

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    @property
    def rejections(self) -> int:
        """Table-tool calls the validator rejected."""
        return sum(1 for c in self.calls if c.code is not None)

    @property
    def repaired_rejections(self) -> int:
        """Rejections followed later in the run by a successful table-tool call (with any
        tool: a rejected SUM of a balance repaired by a queryTable counts). The loop's
        ``repair_attempts`` / ``success_after_repair`` count only same-tool repeats."""
        repaired = 0
        for i, call in enumerate(self.calls):
            if call.code is not None and any(c.success for c in self.calls[i + 1 :]):
                repaired += 1
        return repaired

    def to_wire(self) -> dict[str, Any]:
        """JSON form (camelCase) without the event list."""
        return {
            "answer": self.answer,
            "status": self.status,
            "runId": self.run_id,
            "rounds": self.rounds,
            "costChf": self.cost_chf,
            "validationFailures": self.validation_failures,
            "repairAttempts": self.repair_attempts,
            "successAfterRepair": self.success_after_repair,
            "rejections": self.rejections,
            "repairedRejections": self.repaired_rejections,
            "calls": [c.to_wire() for c in self.calls],
        }


def sub_agent_config(
    base: AgentConfig | None,
    *,
    model: str | None = None,
    remaining_rounds: int | None = None,
    remaining_budget_chf: float | None = None,
) -> AgentConfig:
    """The sub-agent's limits: its own defaults, capped by what the parent has left."""
    config = (base or AgentConfig(max_rounds=DEFAULT_MAX_ROUNDS)).model_copy(deep=True)
    if remaining_rounds is not None:
        config.max_rounds = max(1, min(config.max_rounds, remaining_rounds))
    if remaining_budget_chf is not None:
        budget = max(0.0, remaining_budget_chf)
        config.max_cost_chf = (
            budget if config.max_cost_chf is None else min(config.max_cost_chf, budget)
        )
    if model:
        config.model = model
    config.stream = False
    config.initial_toolboxes = []
    return config


async def run_feature_data_agent(
    features: FeatureTables,
    loop: AgentLoop,
    feature_code: str,
    question: str,
    *,
    context: RunContext | None = None,
    feature_instance_id: str | None = None,
    config: AgentConfig | None = None,
    model: str | None = None,
    remaining_rounds: int | None = None,
    remaining_budget_chf: float | None = None,
    validate: bool = True,
    use_ontology: bool = True,
    parent_run_id: str | None = None,
    neutralization: PlaceholderSession | None = None,
    cancel: asyncio.Event | None = None,
    on_event: Callable[[AgentEvent], Any] | None = None,
) -> FeatureAgentResult:
    """Answer ``question`` from the tables of one instance of ``feature_code``: the table
    tools and the schema prompt of ``features`` (the feature service), run by ``loop`` (the
    kernel's agent loop).

    ``validate=False`` runs without the query validator and ``use_ontology=False`` with the
    legacy domain hints (the eval harness's baseline / phase1 modes). The instance is
    ``feature_instance_id`` or the context's.
    """
    from nyla.agent.loop import RunSpec

    context = _instance_context(context, feature_instance_id, feature_code)
    instance = str(context.feature_instance_id)
    features.feature(feature_code)  # unknown feature -> ConfigurationError before any work
    if _requires_neutralization(features, feature_code):
        # the feature's data says so: whatever the parent run does, these calls are neutralised
        context.require_neutralization = True
    await features.provider(feature_code)
    calls: list[RecordedCall] = []

    def record(tool: str, arguments: dict[str, Any], result: ToolResult) -> None:
        code = result.error_details.code if result.error_details else None
        calls.append(RecordedCall(tool, arguments, result.success, code, result.content))

    tools = features.table_tools(
        feature_code, instance, validate=validate, use_ontology=use_ontology, on_call=record
    )
    system_prompt = features.schema_prompt(
        feature_code, use_ontology=use_ontology, timezone=context.timezone, temporal=False
    )
    run_config = sub_agent_config(
        config,
        model=model,
        remaining_rounds=remaining_rounds,
        remaining_budget_chf=remaining_budget_chf,
    )
    collected: list[AgentEvent] = []
    answer = ""
    summary: dict[str, Any] = {}
    spec = RunSpec(
        question,
        run_config,
        context,
        tools,
        system_prompt=system_prompt,
        parent_run_id=parent_run_id,
        neutralization=neutralization,
        cancel=cancel,
    )
    async for event in loop(spec):
        collected.append(event)
        if on_event is not None:
            on_event(event)
        if event.type == EventType.FINAL:
            answer = event.text
        elif event.type == EventType.AGENT_SUMMARY:
            summary = dict(event.data)
    return _agent_result(answer, summary, calls, collected)


def _requires_neutralization(features: FeatureTables, code: str) -> bool:
    check = getattr(features, "requires_neutralization", None)
    if check is not None:
        return bool(check(code))
    return bool(getattr(features.feature(code), "requires_neutralization", False))


def _instance_context(
    context: RunContext | None, feature_instance_id: str | None, feature_code: str
) -> RunContext:
    """A copy of the run context bound to the feature instance asked for (an error when
    neither the caller nor the context names one)."""
    context = (context or RunContext()).model_copy(deep=True)
    instance = feature_instance_id or context.feature_instance_id
    if not instance:
        raise ConfigurationError(
            f"no feature instance for {feature_code}: pass feature_instance_id or set it on "
            "the run context"
        )
    context.feature_instance_id = instance
    return context


def _agent_result(
    answer: str, summary: dict[str, Any], calls: list[RecordedCall], events: list[AgentEvent]
) -> FeatureAgentResult:
    """The sub-agent's answer with the figures of its ``AGENT_SUMMARY`` event."""
    return FeatureAgentResult(
        answer=answer,
        status=str(summary.get("status", "error")),
        run_id=summary.get("runId"),
        rounds=int(summary.get("rounds", 0)),
        cost_chf=float(summary.get("costChf", 0.0) or 0.0),
        validation_failures=int(summary.get("validationFailures", 0)),
        repair_attempts=int(summary.get("repairAttempts", 0)),
        success_after_repair=int(summary.get("successAfterRepair", 0)),
        calls=calls,
        summary=summary,
        events=events,
    )
