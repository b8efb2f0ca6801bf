"""Runs as jobs of the procrastinate queue (``NYLA_JOBS=procrastinate``): the registered
task ``nyla.agent_run`` (on the job queue's ``jobs`` queue; no nyla job row: the run's own
row records its state) whose one argument is the run's id; the worker drives the stored run
(:meth:`nyla.agent.durable.DurableRuns.drive`) with the spec stored with it. The queue does
not retry it: a run whose worker died is marked ``interrupted`` (:mod:`nyla.agent.run_sweep`),
and a job delivered twice finds its run taken and does nothing, so a run never runs twice."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nyla.agent.durable import DurableRuns
    from nyla.jobs.queue import ProcrastinateRunner

log = logging.getLogger(__name__)

RUN_TASK = "nyla.agent_run"
RUN_JOB_KIND = "run"
#: a queue worker silent this long is dead (procrastinate's workers beat every 10 s)
WORKER_SILENT_S = 30.0
_STATUS = "SELECT status FROM host_runs WHERE run_id = %s"


def add_run_task(queue: ProcrastinateRunner, runs: Callable[[], DurableRuns]) -> None:
    """Register the run task on ``queue`` (``runs`` gives the kernel's
    :class:`DurableRuns`, built when the first run arrives), and the sweep of dead holders'
    runs among the recoveries a worker runs at its start (it then sweeps every few
    seconds)."""

    async def work(handle: Any, args: dict[str, Any]) -> str | None:
        durable = runs()
        durable.sweeper.start()  # a worker ends the runs of dead holders too
        return await durable.drive(str(args["runId"]))

    async def recover() -> None:  # at the worker's start, then every few seconds
        durable = runs()
        await durable.sweep()
        durable.sweeper.start()
        await rescue_unclaimed(queue, durable.db)
        durable.sweeper.also(lambda: rescue_unclaimed(queue, durable.db))

    queue.tasks[RUN_TASK] = work
    queue.recoveries.append(recover)


def run_deferrer(queue: ProcrastinateRunner) -> Callable[[str, str], Any]:
    """``defer(run_id, user_id)``: queue a stored run for a worker."""

    async def defer(run_id: str, user_id: str) -> str:
        # no nyla job row: the run's own row says all (status, holder, heartbeat), and
        # rescue_unclaimed looks after the queue job of a dead worker
        return await queue.defer_task(
            RUN_TASK, {"runId": run_id}, kind=RUN_JOB_KIND, record=False, user_id=user_id
        )

    return defer


async def rescue_unclaimed(queue: ProcrastinateRunner, db: Any) -> int:
    """Run jobs a dead queue worker held (``doing``, its worker silent for
    :data:`WORKER_SILENT_S`): a job whose run is still ``queued`` (the worker died before it
    claimed the run, so nothing of it ran) is delivered again; the job of a run that was
    claimed is ended failed (the run sweep ended the run ``interrupted``). How many were
    delivered again."""
    from procrastinate.jobs import Status

    manager = queue.app.job_manager
    stalled = await manager.get_stalled_jobs(
        task_name=RUN_TASK, seconds_since_heartbeat=WORKER_SILENT_S
    )
    again = 0
    for job in stalled:
        run_id = str((job.task_kwargs.get("args") or {}).get("runId") or "")
        rows = await db.read_driver(lambda conn, r=run_id: conn.rows(_STATUS, (r,)))
        try:
            if rows and rows[0][0] == "queued":
                await manager.retry_job(job)
                again += 1
                log.warning("run %s: its queue worker died before it began; queued again", run_id)
            else:
                await manager.finish_job_by_id_async(job.id, Status.FAILED, delete_job=False)
        except Exception:  # another process was first
            log.debug("stalled run job %s was taken care of elsewhere", job.id, exc_info=True)
    return again
