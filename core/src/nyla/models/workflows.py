"""Stored workflow graphs: action nodes and the typed connections between them (camelCase on
the wire). The graph logic is :mod:`nyla.actions.graph`; storage is
:class:`nyla.actions.workflows.WorkflowService`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_wire(self) -> dict[str, Any]:
        """camelCase, JSON-ready."""
        return self.model_dump(mode="json", by_alias=True)


class WorkflowNode(_Wire):
    """One action node: the action it runs and the parameters set on it (camelCase names);
    a parameter fed by a connection is not set here."""

    id: str = Field(min_length=1, max_length=64)
    method: str = Field(min_length=1)
    action: str = Field(min_length=1)
    parameters: dict[str, Any] = Field(default_factory=dict)
    position: dict[str, float] | None = None


class WorkflowConnection(_Wire):
    """The output of ``from_node`` feeding the parameter ``to_parameter`` of ``to_node``."""

    from_node: str
    to_node: str
    to_parameter: str


class WorkflowProblem(_Wire):
    """What ``validateWorkflow`` found wrong, naming the node (``code``: ``UNKNOWN_ACTION``,
    ``MISSING_PARAMETER``, ``TYPE_MISMATCH``, ``CYCLE``, ``INVALID_VALUE``)."""

    node: str
    code: str
    message: str


class WorkflowGraph(_Wire):
    """A stored workflow: its owner (user, mandate, feature instance when given), nodes and
    connections."""

    id: str
    name: str
    user_id: str
    mandate_id: str | None = None
    feature_instance_id: str | None = None
    nodes: list[WorkflowNode] = Field(default_factory=list)
    connections: list[WorkflowConnection] = Field(default_factory=list)
    updated_at: datetime | None = None

    def node(self, node_id: str) -> WorkflowNode | None:
        """The node with ``node_id``, or ``None``."""
        return next((n for n in self.nodes if n.id == node_id), None)
