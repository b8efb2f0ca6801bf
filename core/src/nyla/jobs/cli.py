"""``nyla worker``: a procrastinate worker process for background syncs
(``NYLA_JOBS=procrastinate``)."""

from __future__ import annotations

import click

from nyla.commands.output import run_async


@click.command()
@click.option("--concurrency", default=2, show_default=True, help="Syncs this worker runs at once.")
@click.option("--name", default=None, help="Worker name (default host:pid).")
def worker(concurrency: int, name: str | None) -> None:
    """Work the sync queue (PostgreSQL, procrastinate) until stopped."""
    from nyla.jobs.queue import ProcrastinateRunner
    from nyla.kernel import Kernel

    async def main() -> None:
        kernel = Kernel(settings={"jobs": "procrastinate"})
        runner = kernel.jobs
        assert isinstance(runner, ProcrastinateRunner)
        try:
            await runner.run_worker(concurrency=concurrency, name=name)
        finally:
            await kernel.aclose()

    run_async(main())
