"""Contracts of an agent run: configuration, run context, events and the persisted trace."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import Field

from nyla.models.base import WireModel
from nyla.models.slotted import SlottedWire


class RunContext(WireModel):
    """Who runs, on whose data, where. Passed explicitly through every layer, never global.

    ``feature_code`` names the feature whose instance ``feature_instance_id`` is (it switches
    that feature's toolboxes on).
    ``allowed_providers`` restricts model selection (e.g. only a private endpoint when data must
    not leave); ``allowed_models`` to the model ids of the user's and mandate's allow-list
    (``None``: every model; the agent runtime fills it in); ``require_neutralization`` blocks a model call when neutralization fails.
    ``role`` is the caller's role (``user``, ``mandateAdmin``, ``sysadmin``; ``None`` for the
    local CLI); ``denied_services`` the service permissions (``service.knowledge``,
    ``service.connector.msft`` ...) the caller may not use, filled in once when the run is
    prepared (:mod:`nyla.access`) and inherited by sub-agents with the rest of the context.
    """

    user_id: str = "local"
    mandate_id: str | None = None
    feature_instance_id: str | None = None
    feature_code: str | None = None
    workflow_id: str | None = None
    timezone: str = "UTC"
    require_neutralization: bool = False
    allowed_providers: list[str] | None = None
    allowed_models: list[str] | None = None
    connections: list[str] = Field(default_factory=list)
    language: str | None = None
    role: str | None = None
    denied_services: list[str] = Field(default_factory=list)
    #: the top-level run the calls are billed to (set by the agent loop; a sub-agent keeps
    #: its parent's, so the ledger rows of a run include everything it started)
    run_id: str | None = None


class AgentConfig(WireModel):
    """Limits and choices for one run (seeds: ``datamodelAgent.AgentConfig``)."""

    max_rounds: int = Field(default=25, ge=1, le=100)
    max_cost_chf: float | None = Field(default=None, ge=0)
    tool_set: str = "core"
    temperature: float | None = None
    model: str | None = None
    initial_toolboxes: list[str] = Field(default_factory=list)
    exclude_action_tools: bool = False
    stream: bool = True
    tool_timeout_s: float = 120.0
    system_prompt: str | None = None


class AgentStatus(StrEnum):
    """End state of a run."""

    RUNNING = "running"
    COMPLETED = "completed"
    MAX_ROUNDS_REACHED = "maxRoundsReached"
    BUDGET_EXCEEDED = "budgetExceeded"
    ERROR = "error"
    CANCELLED = "cancelled"


class EventType(StrEnum):
    """Kinds of events an agent run streams."""

    CHUNK = "CHUNK"
    TOOL_CALL = "TOOL_CALL"
    TOOL_RESULT = "TOOL_RESULT"
    STATUS = "STATUS"
    FINAL = "FINAL"
    AGENT_SUMMARY = "AGENT_SUMMARY"
    ERROR = "ERROR"


class AgentEventFields(WireModel):
    """The fields of an :class:`AgentEvent`, as the pydantic model that validates and writes
    them out."""

    type: EventType
    round: int = 0
    text: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


class AgentEvent(SlottedWire):
    """One streamed event of a run. ``data`` depends on ``type``.

    Used like a pydantic model (``AgentEvent(type=..., text=...)`` and ``model_validate``
    validate, ``model_dump``/``to_wire``/JSON write it out, equality; see
    :class:`~nyla.models.slotted.SlottedWire`). A slotted class because a run makes about
    nine a round from values it has checked (``nyla.agent.events``, with :meth:`of`): a
    pydantic object cost 4-7 us each in the loop, this ~2 less."""

    __slots__ = tuple(AgentEventFields.model_fields)  # (in the fields' order: see ``of``)
    _fields = AgentEventFields

    type: EventType
    round: int
    text: str
    data: dict[str, Any]


class ToolCallLog(WireModel):
    """One executed tool call as recorded in the trace."""

    round: int
    call_id: str
    tool_name: str
    arguments: str
    success: bool
    error: str | None = None
    validation_failure_code: str | None = None
    duration_ms: float = 0.0


class AgentTrace(WireModel):
    """The persisted record of a run with its repair counters (seeds: ``AgentTrace``).

    ``validation_failures``: calls the validator rejected before the DB.
    ``repair_attempts``: repeats of the same tool name in later rounds after a rejection.
    ``success_after_repair``: repair attempts whose result had no validation failure code.
    """

    run_id: str
    status: AgentStatus = AgentStatus.RUNNING
    prompt: str = ""
    final_text: str = ""
    model: str | None = None
    rounds: int = 0
    cost_chf: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: list[ToolCallLog] = Field(default_factory=list)
    validation_failures: int = 0
    repair_attempts: int = 0
    success_after_repair: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    parent_run_id: str | None = None
    context: RunContext = Field(default_factory=RunContext)


class CallRecord(SlottedWire):
    """One executed tool call as its run keeps it until the trace is written: a
    :class:`~nyla.models.agent.ToolCallLog` as a slotted record
    (:class:`~nyla.models.slotted.SlottedWire`). A run records one per tool call
    (``AgentRun.calls``, made with :meth:`of` without validation: the call's id, name and
    arguments come from the validated model answer, ``success`` and ``error`` from the tool's
    ``ToolResult``, the duration from the dispatcher's clock), and none of them leaves the
    process as such: the trace's rows are written from them
    (:func:`nyla.agent.trace.save_trace`), and the read API (``load_trace``, ``list_traces``)
    gives ``ToolCallLog`` models."""

    __slots__ = tuple(ToolCallLog.model_fields)
    _fields = ToolCallLog

    round: int
    call_id: str
    tool_name: str
    arguments: str
    success: bool
    error: str | None
    validation_failure_code: str | None
    duration_ms: float


@dataclass(frozen=True, slots=True)
class RoundToolResult:
    """A tool result as round memory keeps it: which tool, whether it succeeded, and the start
    of its text (a dataclass, not a wire model: one is made per tool call of every round)."""

    tool_name: str
    success: bool
    content: str

    def to_wire(self) -> dict[str, Any]:
        """The stored (JSON) form, camelCase."""
        return {"toolName": self.tool_name, "success": self.success, "content": self.content}
