"""Runs of stored workflows (camelCase on the wire): a run, the state of each of its nodes,
the events it streams, and the options it was started with. The engine is
:mod:`nyla.actions.runs`."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

#: a run's status: waits for a worker, runs, or ended (done, failed, cancelled)
RunStatus = Literal["queued", "running", "done", "failed", "cancelled"]
#: a node's status within a run
NodeStatus = Literal["pending", "running", "done", "failed", "skipped", "cancelled"]
ENDED: tuple[str, ...] = ("done", "failed", "cancelled")


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_wire(self) -> dict[str, Any]:
        """camelCase, JSON-ready."""
        return self.model_dump(mode="json", by_alias=True)


class RunOptions(_Wire):
    """How a run treats its nodes: attempts per node (a failure that may pass on a second
    try: a timeout, a crashed handler), each attempt's deadline (``None``: the action's own),
    the wait between attempts, and the run's budget in CHF and model."""

    max_attempts: int = Field(default=2, ge=1, le=10)
    node_timeout_s: float | None = Field(default=None, gt=0, le=3600)
    retry_delay_s: float = Field(default=1.0, ge=0, le=60)
    max_cost_chf: float | None = Field(default=None, ge=0)
    model: str | None = Field(default=None, max_length=255)


class NodeOutput(_Wire):
    """What a finished node handed on: its result's text and data (and file ids a file
    output names)."""

    text: str = ""
    data: Any = None


class NodeRun(_Wire):
    """One node's state in a run."""

    node_id: str
    method: str
    action: str
    position: int
    status: NodeStatus = "pending"
    attempts: int = 0
    inputs: dict[str, Any] | None = None
    output: NodeOutput | None = None
    error: str | None = None
    error_code: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class WorkflowRun(_Wire):
    """A run of a workflow: who started it, its state, its cost and its nodes in run order."""

    id: str
    workflow_id: str
    workflow_name: str
    user_id: str
    mandate_id: str | None = None
    feature_instance_id: str | None = None
    status: RunStatus
    error: str | None = None
    job_id: str | None = None
    cost_chf: float = 0.0
    options: RunOptions = Field(default_factory=lambda: RunOptions())
    #: the conversation (chat workflow) its nodes' documents go to, if any
    conversation_id: str | None = None
    #: the round and task of the agent call that started it (1, 1 outside an agent run): a
    #: node's documents are numbered with them and the node's place as the action number
    round_number: int = 1
    task_number: int = 1
    #: how often the run was picked up again after its worker died
    resumes: int = 0
    last_event_id: int = 0
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    nodes: list[NodeRun] = Field(default_factory=list)

    @property
    def ended(self) -> bool:
        """True once the run is done, failed or cancelled."""
        return self.status in ENDED


class WorkflowRunEvent(_Wire):
    """One stored event of a run, numbered from 1 (the SSE id): ``RUN_QUEUED``,
    ``RUN_STARTED``, ``RUN_RESUMED``, ``NODE_STARTED``, ``NODE_RETRY``, ``NODE_DONE``,
    ``NODE_FAILED``, ``NODE_SKIPPED``, ``RUN_DONE``, ``RUN_FAILED``, ``RUN_CANCELLED``."""

    seq: int
    run_id: str
    type: str
    node_id: str | None = None
    text: str = ""
    data: dict[str, Any] = Field(default_factory=dict)
    at: datetime | None = None
