"""Workflow runs on the job runtime: :class:`WorkflowRunService` starts a run of a valid
workflow as a job (in this process, or on the procrastinate queue with
``NYLA_JOBS=procrastinate``), reads runs and their stored events, follows a run while it
goes on, cancels it, and at boot picks up the runs a dead worker left: they go on at the
node after the last finished one (:class:`~nyla.actions.run_engine.RunEngine`)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from nyla.actions.bridge import WorkflowBindingError, check_can_change
from nyla.actions.graph import validate_graph
from nyla.actions.run_engine import RunEngine
from nyla.actions.run_store import RunStore
from nyla.agent.authorize import AUTHORIZERS
from nyla.jobs.queue import ProcrastinateRunner
from nyla.jobs.store import worker_alive
from nyla.models.workflow_runs import ENDED, RunOptions, WorkflowRun, WorkflowRunEvent

if TYPE_CHECKING:
    from nyla.actions.catalog import ActionCatalog
    from nyla.actions.executor import ActionExecutor
    from nyla.actions.workflows import WorkflowService
    from nyla.agent.run_bus import RunBus
    from nyla.db import Database
    from nyla.jobs.runtime import JobHandle, JobRunner
    from nyla.jobs.tables import Job
    from nyla.models.agent import RunContext
    from nyla.models.tool_services import ToolServices
    from nyla.models.workflows import WorkflowGraph, WorkflowProblem

log = logging.getLogger("nyla.actions")

#: the procrastinate task that runs a workflow run
TASK = "nyla.workflow_run"
JOB_KIND = "workflow"


def add_workflow_task(queue: ProcrastinateRunner, runs: Callable[[], WorkflowRunService]) -> None:
    """Register the workflow-run task :data:`TASK` on ``queue`` (``runs`` gives the kernel's
    run service, built when the first run arrives)."""

    async def work(handle: JobHandle, args: dict[str, Any]) -> str | None:
        return await runs().work(handle, args)

    queue.tasks[TASK] = work


class WorkflowRunNotFoundError(LookupError):
    """No run with that id that the caller may see (another user's is answered so too)."""


class WorkflowNotRunnableError(ValueError):
    """The workflow has problems (``problems``) that keep it from running."""

    def __init__(self, workflow_id: str, problems: list[WorkflowProblem]) -> None:
        lines = "; ".join(p.message for p in problems)
        super().__init__(f"workflow {workflow_id} cannot run: {lines}")
        self.problems = problems


def run_order(graph: WorkflowGraph) -> list[str]:
    """The nodes in an order where every node comes after those that feed it (ties keep the
    graph's order)."""
    feeds: dict[str, set[str]] = {n.id: set() for n in graph.nodes}
    for c in graph.connections:
        feeds[c.to_node].add(c.from_node)
    order: list[str] = []
    while len(order) < len(feeds):
        ready = [n.id for n in graph.nodes if n.id not in order and feeds[n.id] <= set(order)]
        if not ready:  # validation refuses cycles before a run starts
            raise ValueError(f"workflow {graph.id} has a cycle")
        order.append(ready[0])
    return order


class WorkflowRunService:
    """Runs of stored workflows: built on the database, the workflow graphs, the action
    catalog and executor, the job runner, the services an action gets (a callable) and
    ``prepare`` (the caller's context completed with their account's model allow-list);
    ``bus`` (the process's ``LISTEN``/``NOTIFY`` listener) wakes a follower when a run's
    events commit, else followers poll every ``poll_s``."""

    def __init__(
        self,
        db: Database,
        workflows: WorkflowService,
        catalog: ActionCatalog,
        executor: ActionExecutor,
        jobs: JobRunner | ProcrastinateRunner,
        services: Callable[[], ToolServices],
        *,
        prepare: Callable[[RunContext], Awaitable[RunContext]] | None = None,
        bus: RunBus | None = None,
        poll_s: float = 0.25,
    ) -> None:
        self._db, self._workflows, self._catalog = db, workflows, catalog
        self._jobs = jobs
        self._prepare = prepare
        self.poll_s = poll_s
        self._bus = bus
        self.store = RunStore(db, notify=bus.events_channel if bus is not None else None)
        self.engine = RunEngine(self.store, catalog, executor, services)

    # ---- starting ---------------------------------------------------------------------

    async def start(
        self,
        workflow_id: str,
        context: RunContext,
        options: RunOptions | None = None,
        *,
        round_number: int = 1,
        task_number: int = 1,
    ) -> WorkflowRun:
        """Start a run of the workflow as ``context``'s user (as a job); the workflow must
        validate (:class:`WorkflowNotRunnableError` else). Its nodes' documents go to the
        conversation ``context.workflow_id`` (when set), numbered ``round_number``,
        ``task_number`` (the agent call that started it) and the node's place; a
        conversation the caller may not change is refused before anything is stored
        (:class:`~nyla.actions.bridge.WorkflowBindingError`, a ``PermissionError``)."""
        graph = await self._workflows.get(workflow_id, context)
        if context.workflow_id is not None:
            refusal = await check_can_change(context.workflow_id, context, self._db)
            if refusal is not None:
                raise WorkflowBindingError(refusal)
        problems = validate_graph(self._catalog, graph)
        if problems:
            raise WorkflowNotRunnableError(workflow_id, problems)
        if not graph.nodes:
            raise WorkflowNotRunnableError(workflow_id, [])
        if self._prepare is not None:
            context = await self._prepare(context)
        run_id = uuid.uuid4().hex
        origin = {"round": max(round_number, 1), "task": max(task_number, 1)}
        order = run_order(graph)
        await self.store.create(run_id, graph, order, context, options or RunOptions(), origin)
        await self._launch(run_id, context)
        return await self._get(run_id)

    async def _launch(self, run_id: str, context: RunContext) -> str:
        """Hand the run to the job runtime; returns the job id."""
        fields: dict[str, Any] = {"user_id": context.user_id, "mandate_id": context.mandate_id}
        if isinstance(self._jobs, ProcrastinateRunner):
            job_id = await self._jobs.defer_task(
                TASK, {"runId": run_id}, kind=JOB_KIND, lock=f"workflow-run:{run_id}", **fields
            )
        else:
            job_id = await self._jobs.submit(
                JOB_KIND, functools.partial(self._work, run_id), **fields
            )
        await self.store.set_job(run_id, job_id)
        return job_id

    async def work(self, handle: JobHandle, args: dict[str, Any]) -> str | None:
        """The job body on the procrastinate queue (task :data:`TASK`)."""
        return await self._work(str(args["runId"]), handle)

    async def _work(self, run_id: str, handle: JobHandle) -> str | None:
        """Execute the run in this process; an unexpected failure ends it ``failed``."""
        from nyla.jobs.store import this_worker

        try:
            return await self.engine.execute(run_id, this_worker())
        except asyncio.CancelledError:
            raise  # the process stops: the run stays running for the next boot to resume
        except Exception as exc:
            log.exception("workflow run %s failed", run_id)
            await self.store.finish(run_id, "failed", f"{type(exc).__name__}: {exc}")
            return "failed"

    # ---- reading ----------------------------------------------------------------------

    async def get(self, run_id: str, context: RunContext) -> WorkflowRun:
        """The run, if ``context`` may see it (:class:`WorkflowRunNotFoundError` else)."""
        if await AUTHORIZERS["workflowRun"]([run_id], context, self._db):
            raise WorkflowRunNotFoundError(f"workflow run {run_id!r} not found")
        return await self._get(run_id)

    async def _get(self, run_id: str) -> WorkflowRun:
        run = await self.store.get(run_id)
        if run is None:
            raise WorkflowRunNotFoundError(f"workflow run {run_id!r} not found")
        return run

    async def list_for(
        self, context: RunContext, *, workflow_id: str | None = None, limit: int = 50
    ) -> list[WorkflowRun]:
        """The runs ``context`` may see (of one workflow), newest first."""
        if workflow_id is not None:
            await self._workflows.get(workflow_id, context)
        return await self.store.list_runs(
            context.user_id,
            mandate_id=context.mandate_id,
            feature_instance_id=context.feature_instance_id,
            workflow_id=workflow_id,
            limit=limit,
        )

    async def events(
        self, run_id: str, context: RunContext, after: int = 0
    ) -> list[WorkflowRunEvent]:
        """The run's stored events after ``after``."""
        await self.get(run_id, context)
        return await self.store.events(run_id, after)

    async def follow(
        self, run_id: str, context: RunContext, after: int = 0, *, keepalive: float | None = None
    ) -> AsyncIterator[WorkflowRunEvent | None]:
        """The run's events after ``after`` as they are stored, until it ended (whichever
        process runs it); ``None`` after ``keepalive`` seconds without one."""
        await self.get(run_id, context)
        with contextlib.ExitStack() as stack:
            wake = stack.enter_context(self._bus.subscribe(run_id)) if self._bus else None
            idle = 0.0
            while True:
                if wake is not None:
                    wake.clear()  # before reading: a commit after the read wakes the wait
                status = await self.store.status(run_id)  # first: an end comes with its event
                events = await self.store.events(run_id, after)
                for event in events:
                    yield event
                    after = event.seq
                if status in ENDED and not events:
                    return
                if events:
                    idle = 0.0
                    continue
                idle += await self._idle(wake, keepalive, idle)
                if keepalive is not None and idle >= keepalive:
                    idle = 0.0
                    yield None

    async def _idle(
        self, wake: asyncio.Event | None, keepalive: float | None, idle: float
    ) -> float:
        """Wait for the run's next commit (a wake-up of the bus, or the poll interval);
        returns the seconds waited."""
        wait = self.poll_s if wake is None or self._bus is None else self._bus.poll_interval()
        if keepalive is not None:
            wait = min(wait, max(keepalive - idle, 0.0))
        if wake is None:
            await asyncio.sleep(wait)
            return wait
        started = time.monotonic()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), wait)
        return time.monotonic() - started

    async def wait(self, run_id: str, context: RunContext) -> WorkflowRun:
        """The run once it ended."""
        async for _ in self.follow(run_id, context):
            pass
        return await self._get(run_id)

    # ---- control ----------------------------------------------------------------------

    async def cancel(self, run_id: str, context: RunContext) -> bool:
        """Cancel an open run of the caller: the node under way is stopped, the rest never
        runs. False when it had ended."""
        run = await self.get(run_id, context)
        cancelled = await self.store.finish(run_id, "cancelled", "cancelled by the user")
        if cancelled and run.job_id is not None:
            await self._jobs.cancel(run.job_id)
        return cancelled

    async def resume_interrupted(self) -> list[str]:
        """At boot: open runs whose worker process ended (or whose job ended without them)
        go on as new jobs, at the node after the last finished one. Returns their ids."""
        from nyla.models.agent import RunContext

        resumed = []
        for row in await self.store.open_runs():
            job = await self._jobs.store.get(row.job_id) if row.job_id else None
            if not _interrupted(row.status, row.worker, job):
                continue
            if job is not None:
                await self._jobs.store.finish(job.id, error="interrupted: its worker ended")
                if isinstance(self._jobs, ProcrastinateRunner):
                    await self._jobs.end_stale(job.id)
            await self.store.requeue(row.id)
            await self._launch(row.id, RunContext.model_validate(row.context))
            resumed.append(row.id)
        if resumed:
            log.warning("resuming %d interrupted workflow run(s)", len(resumed))
        return resumed


def _interrupted(status: str, worker: str | None, job: Job | None) -> bool:
    """Whether an open run lost its worker: its job ended (boot recovery ended a dead
    worker's), it runs on a process that is gone, or it waits in a dead process's job (a job
    on the queue has no worker yet and waits for one)."""
    if job is None or job.status not in ("queued", "running"):
        return True
    if status == "running":
        return not worker_alive(worker)
    return job.worker is not None and not worker_alive(job.worker)
