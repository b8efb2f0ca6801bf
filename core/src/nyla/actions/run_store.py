"""Workflow runs in PostgreSQL: :class:`RunStore` writes each change of a run or node
together with the event that reports it, in one transaction, numbering the run's events
under a lock on its row (so they are stored in order, whichever process writes them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select, update

from nyla.jobs.store import worker_alive
from nyla.models.workflow_runs import (
    NodeOutput,
    NodeRun,
    RunOptions,
    WorkflowRun,
    WorkflowRunEvent,
)
from nyla.tables.workflow_runs import NodeRunRow, RunEventRow, WorkflowRunRow

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from nyla.db import Database
    from nyla.models.agent import RunContext
    from nyla.models.workflows import WorkflowGraph

OPEN = ("queued", "running")


def _now() -> datetime:
    return datetime.now(UTC)


def _node(row: NodeRunRow) -> NodeRun:
    return NodeRun(
        node_id=row.node_id,
        method=row.method,
        action=row.action,
        position=row.position,
        status=row.status,  # type: ignore[arg-type]
        attempts=row.attempts,
        inputs=row.inputs,
        output=NodeOutput.model_validate(row.output) if row.output is not None else None,
        error=row.error,
        error_code=row.error_code,
        started_at=row.started_at,
        finished_at=row.finished_at,
    )


def _run(row: WorkflowRunRow, nodes: list[NodeRunRow]) -> WorkflowRun:
    return WorkflowRun(
        id=row.id,
        workflow_id=row.workflow_id,
        workflow_name=row.workflow_name,
        user_id=row.user_id,
        mandate_id=row.mandate_id,
        feature_instance_id=row.feature_instance_id,
        status=row.status,  # type: ignore[arg-type]
        error=row.error,
        job_id=row.job_id,
        cost_chf=row.cost_chf,
        options=RunOptions.model_validate(row.options or {}),
        conversation_id=(row.context or {}).get("workflowId")
        or (row.context or {}).get("workflow_id"),
        round_number=int((row.origin or {}).get("round") or 1),
        task_number=int((row.origin or {}).get("task") or 1),
        resumes=row.resumes,
        last_event_id=row.last_seq,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        nodes=[_node(n) for n in sorted(nodes, key=lambda n: n.position)],
    )


class RunStore:
    """Runs, node states and events of workflow runs."""

    def __init__(self, db: Database, *, notify: str | None = None) -> None:
        self.db = db
        #: the channel each event is announced on (``run_id:seq``, delivered at commit)
        self.notify = notify

    async def create(
        self,
        run_id: str,
        graph: WorkflowGraph,
        order: list[str],
        context: RunContext,
        options: RunOptions,
        origin: dict[str, int] | None = None,
    ) -> WorkflowRun:
        """A queued run of ``graph`` as it is now, its nodes pending in ``order``; ``origin``
        the round and task of the agent call that started it."""
        row = WorkflowRunRow(
            id=run_id,
            workflow_id=graph.id,
            workflow_name=graph.name,
            user_id=context.user_id,
            mandate_id=context.mandate_id,
            feature_instance_id=graph.feature_instance_id or context.feature_instance_id,
            context=context.model_dump(mode="json"),
            graph={
                "nodes": [n.to_wire() for n in graph.nodes],
                "connections": [c.to_wire() for c in graph.connections],
            },
            options=options.to_wire(),
            origin=dict(origin or {}),
            status="queued",
            cost_chf=0.0,
            resumes=0,
            last_seq=0,
        )
        async with self.db.session() as s:
            s.add(row)
            await s.flush()
            for position, node_id in enumerate(order):
                node = graph.node(node_id)
                assert node is not None  # the order holds the graph's own nodes
                s.add(
                    NodeRunRow(
                        run_id=run_id,
                        node_id=node_id,
                        method=node.method,
                        action=node.action,
                        position=position,
                        status="pending",
                        attempts=0,
                    )
                )
            await self._event(s, run_id, "RUN_QUEUED", text=f"run of {graph.name!r} queued")
        found = await self.get(run_id)
        assert found is not None
        return found

    async def get(self, run_id: str) -> WorkflowRun | None:
        """The run with its nodes, or ``None``."""
        async with self.db.read_session() as s:
            row = await s.get(WorkflowRunRow, run_id)
            if row is None:
                return None
            nodes = await s.execute(select(NodeRunRow).where(NodeRunRow.run_id == run_id))
            return _run(row, list(nodes.scalars()))

    async def row(self, run_id: str) -> WorkflowRunRow | None:
        """The run's row (its context and graph)."""
        async with self.db.read_session() as s:
            return await s.get(WorkflowRunRow, run_id)

    async def list_runs(
        self,
        user_id: str,
        *,
        mandate_id: str | None = None,
        feature_instance_id: str | None = None,
        workflow_id: str | None = None,
        limit: int = 50,
    ) -> list[WorkflowRun]:
        """The user's runs (of one workflow), newest first: those of ``mandate_id`` or of
        none, and when ``feature_instance_id`` is given those of that instance or of none —
        filtered in the query, before ``limit``."""
        mandate = WorkflowRunRow.mandate_id
        query = select(WorkflowRunRow).where(
            WorkflowRunRow.user_id == user_id,
            mandate.is_(None)
            if mandate_id is None
            else or_(mandate.is_(None), mandate == mandate_id),
        )
        if feature_instance_id is not None:
            instance = WorkflowRunRow.feature_instance_id
            query = query.where(or_(instance.is_(None), instance == feature_instance_id))
        if workflow_id is not None:
            query = query.where(WorkflowRunRow.workflow_id == workflow_id)
        query = query.order_by(WorkflowRunRow.created_at.desc()).limit(limit)
        async with self.db.read_session() as s:
            rows = list((await s.execute(query)).scalars())
            ids = [r.id for r in rows]
            nodes = list(
                (await s.execute(select(NodeRunRow).where(NodeRunRow.run_id.in_(ids)))).scalars()
            )
        return [_run(r, [n for n in nodes if n.run_id == r.id]) for r in rows]

    async def open_runs(self) -> list[WorkflowRunRow]:
        """Runs that have not ended (boot recovery looks for dead workers' among them)."""
        async with self.db.read_session() as s:
            query = select(WorkflowRunRow).where(WorkflowRunRow.status.in_(OPEN))
            return list((await s.execute(query)).scalars())

    async def status(self, run_id: str) -> str | None:
        """The run's status (a running node polls it for a cancel)."""
        async with self.db.read_session() as s:
            return await s.scalar(select(WorkflowRunRow.status).where(WorkflowRunRow.id == run_id))

    async def set_job(self, run_id: str, job_id: str) -> None:
        """The job that runs (or will run) the run."""
        async with self.db.session() as s:
            await s.execute(
                update(WorkflowRunRow).where(WorkflowRunRow.id == run_id).values(job_id=job_id)
            )

    async def requeue(self, run_id: str) -> None:
        """An open run whose worker is gone waits for a new one (any worker may claim it)."""
        async with self.db.session() as s:
            await s.execute(
                update(WorkflowRunRow)
                .where(WorkflowRunRow.id == run_id, WorkflowRunRow.status.in_(OPEN))
                .values(status="queued", worker=None)
            )

    async def claim(self, run_id: str, worker: str) -> bool | None:
        """Mark an open run running on ``worker``; ``None`` when it ended (nothing to do),
        else whether it was picked up again (some node started before)."""
        async with self.db.session() as s:
            row = await s.get(WorkflowRunRow, run_id, with_for_update=True)
            if row is None or row.status not in OPEN:
                return None
            if row.status == "running" and row.worker != worker and worker_alive(row.worker):
                return None  # another live process runs it
            started = await s.scalar(
                select(NodeRunRow.node_id)
                .where(NodeRunRow.run_id == run_id, NodeRunRow.attempts > 0)
                .limit(1)
            )
            resumed = started is not None
            row.status, row.worker = "running", worker
            row.started_at = row.started_at or _now()
            if resumed:
                row.resumes += 1
            kind, text = ("RUN_RESUMED", "resumed") if resumed else ("RUN_STARTED", "started")
            await self._event(s, run_id, kind, text=f"run {text} on {worker}", locked=row)
        return resumed

    async def node_started(self, run_id: str, node_id: str, inputs: dict[str, Any]) -> int:
        """One more attempt of the node begins; returns its number."""
        async with self.db.session() as s:
            node = await s.get(NodeRunRow, (run_id, node_id), with_for_update=True)
            assert node is not None
            node.status, node.inputs = "running", inputs
            node.attempts += 1
            node.started_at = _now()
            node.error = node.error_code = None
            attempt = node.attempts
            await self._event(
                s, run_id, "NODE_STARTED", node_id, f"{node.method}.{node.action} attempt {attempt}",
                {"attempt": attempt},
            )  # fmt: skip
        return attempt

    async def node_retry(self, run_id: str, node_id: str, error: str, code: str) -> None:
        """The node's attempt failed and it will be tried again."""
        async with self.db.session() as s:
            await s.execute(
                update(NodeRunRow)
                .where(NodeRunRow.run_id == run_id, NodeRunRow.node_id == node_id)
                .values(error=error, error_code=code)
            )
            await self._event(s, run_id, "NODE_RETRY", node_id, error, {"code": code})

    async def node_done(self, run_id: str, node_id: str, output: NodeOutput, cost: float) -> None:
        """The node finished: its output is kept and its cost added to the run's."""
        async with self.db.session() as s:
            node = await s.get(NodeRunRow, (run_id, node_id), with_for_update=True)
            assert node is not None
            node.status, node.output, node.finished_at = "done", output.to_wire(), _now()
            run = await s.get(WorkflowRunRow, run_id, with_for_update=True)
            assert run is not None
            run.cost_chf = (run.cost_chf or 0.0) + cost
            data = {"output": output.to_wire(), "costChf": cost, "attempt": node.attempts}
            await self._event(s, run_id, "NODE_DONE", node_id, output.text[:500], data, locked=run)

    async def node_failed(self, run_id: str, node_id: str, error: str, code: str) -> None:
        """The node failed for good."""
        await self._end_node(run_id, node_id, "failed", error, code, "NODE_FAILED")

    async def node_cancelled(self, run_id: str, node_id: str) -> None:
        """The node was stopped by a cancel of its run."""
        await self._end_node(run_id, node_id, "cancelled", "cancelled", "CANCELLED", None)

    async def _end_node(
        self, run_id: str, node_id: str, status: str, error: str, code: str, event: str | None
    ) -> None:
        async with self.db.session() as s:
            await s.execute(
                update(NodeRunRow)
                .where(NodeRunRow.run_id == run_id, NodeRunRow.node_id == node_id)
                .values(status=status, error=error, error_code=code, finished_at=_now())
            )
            if event is not None:
                await self._event(s, run_id, event, node_id, error, {"code": code})

    async def finish(self, run_id: str, status: str, error: str | None = None) -> bool:
        """End an open run (``done``, ``failed``, ``cancelled``); nodes that did not run are
        marked ``skipped`` (``cancelled`` when the run was), the node under way ``cancelled``
        (or ``failed`` with the run's error). False when it had ended."""
        async with self.db.session() as s:
            row = await s.get(WorkflowRunRow, run_id, with_for_update=True)
            if row is None or row.status not in OPEN:
                return False
            row.status, row.error, row.finished_at = status, error, _now()
            cancelled = status == "cancelled"
            stopped: dict[str, str | None] = {
                "status": "cancelled",
                "error": "cancelled",
                "error_code": "CANCELLED",
            }
            if not cancelled:  # a run that failed outside its nodes: the node under way too
                stopped = {"status": "failed", "error": error, "error_code": "RUN_FAILED"}
            for was, values in (
                ("running", stopped),
                ("pending", {"status": "cancelled" if cancelled else "skipped"}),
            ):
                await s.execute(
                    update(NodeRunRow)
                    .where(NodeRunRow.run_id == run_id, NodeRunRow.status == was)
                    .values(finished_at=_now(), **values)
                )
            text = error or status
            data = {"status": status, "costChf": row.cost_chf}
            await self._event(s, run_id, f"RUN_{status.upper()}", None, text, data, locked=row)
        return True

    async def events(self, run_id: str, after: int = 0) -> list[WorkflowRunEvent]:
        """The run's events with a number above ``after``, in order."""
        query = (
            select(RunEventRow)
            .where(RunEventRow.run_id == run_id, RunEventRow.seq > after)
            .order_by(RunEventRow.seq)
        )
        async with self.db.read_session() as s:
            rows = list((await s.execute(query)).scalars())
        return [
            WorkflowRunEvent(
                seq=r.seq, run_id=r.run_id, type=r.type, node_id=r.node_id, text=r.text,
                data=r.data or {}, at=r.at,
            )
            for r in rows
        ]  # fmt: skip

    async def _event(
        self,
        s: AsyncSession,
        run_id: str,
        kind: str,
        node_id: str | None = None,
        text: str = "",
        data: dict[str, Any] | None = None,
        *,
        locked: WorkflowRunRow | None = None,
    ) -> None:
        """Append an event in ``s``'s transaction, numbered under the run row's lock."""
        row = locked or await s.get(WorkflowRunRow, run_id, with_for_update=True)
        assert row is not None
        row.last_seq = (row.last_seq or 0) + 1
        s.add(
            RunEventRow(
                run_id=run_id, seq=row.last_seq, type=kind, node_id=node_id, text=text,
                data=data or {}, at=_now(),
            )
        )  # fmt: skip
        if self.notify is not None:
            await s.execute(select(func.pg_notify(self.notify, f"{run_id}:{row.last_seq}")))
