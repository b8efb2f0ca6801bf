"""Runs as jobs of the procrastinate queue (``NYLA_JOBS=procrastinate``): the registered
task ``nyla.agent_run`` (on the job queue's ``jobs`` queue, as a nyla job of kind ``run``)
whose one argument is the run's id; the worker drives the stored run
(:meth:`nyla.agent.durable.DurableRuns.drive`) with the spec stored with it. The queue does
not retry it: a run whose worker died is marked ``interrupted`` (:mod:`nyla.agent.run_sweep`),
and a job delivered twice finds its run taken and does nothing, so a run never runs twice."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nyla.agent.durable import DurableRuns
    from nyla.jobs.queue import ProcrastinateRunner

RUN_TASK = "nyla.agent_run"
RUN_JOB_KIND = "run"


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

    queue.tasks[RUN_TASK] = work
    queue.recoveries.append(recover)


def run_deferrer(queue: ProcrastinateRunner) -> Callable[[str, str], Any]:
    """``defer(run_id, user_id)``: queue a stored run for a worker."""

    async def defer(run_id: str, user_id: str) -> str:
        return await queue.defer_task(
            RUN_TASK, {"runId": run_id}, kind=RUN_JOB_KIND, user_id=user_id
        )

    return defer
