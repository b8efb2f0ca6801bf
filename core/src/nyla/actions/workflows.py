"""Stored workflow graphs: :class:`WorkflowService` reads and edits a user's graphs, each
edit checked against the action catalog (:mod:`nyla.actions.graph`) and every id against
the caller's context through the kernel's one owned-id check (:mod:`nyla.agent.authorize`)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from sqlalchemy import or_, select

from nyla.actions.catalog import tool_name
from nyla.actions.graph import (
    WorkflowEditError,
    check_connection,
    check_node,
    validate_graph,
)
from nyla.actions.owned import check_owned
from nyla.agent.authorize import AUTHORIZERS
from nyla.models.tools import ToolContext
from nyla.models.workflows import WorkflowConnection, WorkflowGraph, WorkflowNode, WorkflowProblem
from nyla.tables.workflows import ActionWorkflowRow

if TYPE_CHECKING:
    from collections.abc import Callable

    from nyla.actions.catalog import ActionCatalog
    from nyla.db import Database
    from nyla.models.agent import RunContext
    from nyla.models.tool_services import ToolWorkflowRuns


class WorkflowNotFoundError(LookupError):
    """No workflow with that id that the caller may see (another user's is answered so too)."""


def _graph(row: ActionWorkflowRow) -> WorkflowGraph:
    return WorkflowGraph(
        id=row.id,
        name=row.name,
        user_id=row.user_id,
        mandate_id=row.mandate_id,
        feature_instance_id=row.feature_instance_id,
        nodes=[WorkflowNode.model_validate(n) for n in row.nodes],
        connections=[WorkflowConnection.model_validate(c) for c in row.connections],
        updated_at=row.updated_at,
    )


class WorkflowService:
    """A user's workflow graphs in PostgreSQL, built on the database and the action catalog;
    ``runs`` gives their runs (a callable: the run service is built on this one)."""

    def __init__(
        self,
        db: Database,
        catalog: ActionCatalog,
        *,
        runs: Callable[[], ToolWorkflowRuns] | None = None,
    ) -> None:
        self._db, self._catalog = db, catalog
        self._runs = runs

    @property
    def runs(self) -> ToolWorkflowRuns:
        """The runs of workflows (``runWorkflow``, ``readWorkflowRun``)."""
        if self._runs is None:
            raise LookupError("workflow runs are not available here: the kernel handed none")
        return self._runs()

    async def create(
        self, name: str, context: RunContext, *, feature_instance_id: str | None = None
    ) -> WorkflowGraph:
        """A new empty workflow of ``context``'s user (and feature instance: the one given,
        else the run's)."""
        row = ActionWorkflowRow(
            id=uuid.uuid4().hex,
            user_id=context.user_id,
            mandate_id=context.mandate_id,
            feature_instance_id=feature_instance_id or context.feature_instance_id,
            name=name,
            nodes=[],
            connections=[],
        )
        async with self._db.session() as s:
            s.add(row)
            await s.flush()
            await s.refresh(row)
            return _graph(row)

    async def list_for(self, context: RunContext) -> list[WorkflowGraph]:
        """The workflows ``context`` may see, newest change first."""
        statement = select(ActionWorkflowRow).where(
            ActionWorkflowRow.user_id == context.user_id,
            or_(
                ActionWorkflowRow.mandate_id.is_(None),
                ActionWorkflowRow.mandate_id == context.mandate_id,
            ),
        )
        if context.feature_instance_id is not None:
            statement = statement.where(
                or_(
                    ActionWorkflowRow.feature_instance_id.is_(None),
                    ActionWorkflowRow.feature_instance_id == context.feature_instance_id,
                )
            )
        async with self._db.read_session() as s:
            rows = await s.execute(statement.order_by(ActionWorkflowRow.updated_at.desc()))
            return [_graph(r) for r in rows.scalars()]

    async def get(self, workflow_id: str, context: RunContext) -> WorkflowGraph:
        """The workflow, if ``context`` may see it (else :class:`WorkflowNotFoundError`)."""
        if await AUTHORIZERS["workflowGraph"]([workflow_id], context, self._db):
            raise WorkflowNotFoundError(f"workflow {workflow_id!r} not found")
        async with self._db.read_session() as s:
            row = await s.get(ActionWorkflowRow, workflow_id)
        if row is None:
            raise WorkflowNotFoundError(f"workflow {workflow_id!r} not found")
        return _graph(row)

    async def save(self, graph: WorkflowGraph, context: RunContext) -> WorkflowGraph:
        """Replace the nodes, connections and name of ``graph.id`` (the owner stays). Each
        node of a known action and each connection is checked as an edit is; a node of an
        action no longer in the catalog is kept for ``validate`` to report."""
        current = await self.get(graph.id, context)
        ids = [n.id for n in graph.nodes]
        if len(ids) != len(set(ids)):
            raise WorkflowEditError("node ids must be unique")
        for node in graph.nodes:
            if self._catalog.get(node.method, node.action) is not None:
                await self._check_node(node, context)
        rebuilt = current.model_copy(update={"name": graph.name, "nodes": graph.nodes})
        rebuilt.connections = []
        for connection in graph.connections:
            check_connection(self._catalog, rebuilt, connection)
            rebuilt.connections.append(connection)
        return await self._store(rebuilt)

    async def add_node(
        self,
        workflow_id: str,
        method: str,
        action: str,
        parameters: dict[str, Any],
        context: RunContext,
        *,
        node_id: str | None = None,
        position: dict[str, float] | None = None,
    ) -> WorkflowNode:
        """A new node (id given, else the next free ``n<k>``) running ``method.action``."""
        graph = await self.get(workflow_id, context)
        taken = {n.id for n in graph.nodes}
        if node_id is None:
            node_id = next(f"n{k}" for k in range(1, len(taken) + 2) if f"n{k}" not in taken)
        elif node_id in taken:
            raise WorkflowEditError(f"node {node_id!r} already exists in workflow {workflow_id}")
        node = WorkflowNode(
            id=node_id, method=method, action=action, parameters=parameters, position=position
        )
        await self._check_node(node, context)
        graph.nodes.append(node)
        await self._store(graph)
        return node

    async def update_node(
        self,
        workflow_id: str,
        node_id: str,
        context: RunContext,
        *,
        parameters: dict[str, Any] | None = None,
        position: dict[str, float] | None = None,
    ) -> WorkflowNode:
        """Merge ``parameters`` into the node's (a ``None`` value unsets one); move it."""
        graph = await self.get(workflow_id, context)
        node = self._node(graph, node_id)
        merged = {**node.parameters, **(parameters or {})}
        changed = node.model_copy(
            update={
                "parameters": {k: v for k, v in merged.items() if v is not None},
                "position": position if position is not None else node.position,
            }
        )
        await self._check_node(changed, context)
        graph.nodes = [changed if n.id == node_id else n for n in graph.nodes]
        await self._store(graph)
        return changed

    async def remove_node(self, workflow_id: str, node_id: str, context: RunContext) -> int:
        """Remove the node and its connections; answers how many connections went with it."""
        graph = await self.get(workflow_id, context)
        self._node(graph, node_id)
        kept = [c for c in graph.connections if node_id not in (c.from_node, c.to_node)]
        dropped = len(graph.connections) - len(kept)
        graph.nodes = [n for n in graph.nodes if n.id != node_id]
        graph.connections = kept
        await self._store(graph)
        return dropped

    async def connect(
        self, workflow_id: str, connection: WorkflowConnection, context: RunContext
    ) -> WorkflowGraph:
        """Add ``connection`` once its ends, parameter and types are checked."""
        graph = await self.get(workflow_id, context)
        check_connection(self._catalog, graph, connection)
        graph.connections.append(connection)
        return await self._store(graph)

    async def disconnect(
        self, workflow_id: str, connection: WorkflowConnection, context: RunContext
    ) -> WorkflowGraph:
        """Remove ``connection`` (refused when there is no such connection)."""
        graph = await self.get(workflow_id, context)
        if connection not in graph.connections:
            raise WorkflowEditError(
                f"no connection from node {connection.from_node!r} to "
                f"{connection.to_node!r}.{connection.to_parameter}"
            )
        graph.connections.remove(connection)
        return await self._store(graph)

    async def validate(self, workflow_id: str, context: RunContext) -> list[WorkflowProblem]:
        """Every problem of the workflow (empty: it is ready to run)."""
        return validate_graph(self._catalog, await self.get(workflow_id, context))

    def _node(self, graph: WorkflowGraph, node_id: str) -> WorkflowNode:
        node = graph.node(node_id)
        if node is None:
            known = ", ".join(n.id for n in graph.nodes) or "none"
            raise WorkflowEditError(f"no node {node_id!r} in workflow {graph.id} (nodes: {known})")
        return node

    async def _check_node(self, node: WorkflowNode, context: RunContext) -> None:
        """The node fits its action's signature and its owned ids are ``context``'s."""
        check_node(self._catalog, node)
        found = self._catalog.get(node.method, node.action)
        assert found is not None  # check_node refused unknown actions
        params = found[1].params
        by_wire = {(f.alias or name): name for name, f in params.model_fields.items()}
        values = {by_wire[k]: v for k, v in node.parameters.items() if k in by_wire}
        unset = dict.fromkeys(params.model_fields)  # a parameter a connection feeds
        refusal = await check_owned(
            tool_name(node.method, node.action),
            params.model_construct(**{**unset, **values}),
            ToolContext(run=context),
            self._db,
        )
        if refusal is not None:
            raise WorkflowEditError(f"node {node.id!r}: {refusal.error}")

    async def _store(self, graph: WorkflowGraph) -> WorkflowGraph:
        async with self._db.session() as s:
            row = await s.get(ActionWorkflowRow, graph.id)
            assert row is not None  # get() found it before the edit
            row.name = graph.name
            row.nodes = [n.to_wire() for n in graph.nodes]
            row.connections = [c.to_wire() for c in graph.connections]
            await s.flush()
            await s.refresh(row)
            return _graph(row)
