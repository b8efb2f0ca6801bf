"""``nyla worker``: a procrastinate worker process for queued syncs, agent runs and the
other registered jobs (``NYLA_JOBS=procrastinate``)."""

from __future__ import annotations

import importlib
from typing import Any

import click

from nyla.commands.output import run_async


def add_plugins(kernel: Any, specs: tuple[str, ...]) -> None:
    """Register plugins that are not installed (``module`` or ``module:factory``), as
    ``nyla serve --plugin`` does: a worker must know every model and toolbox its runs use."""
    for spec in specs:
        module, _, attr = spec.partition(":")
        try:
            obj = importlib.import_module(module)
            obj = getattr(obj, attr)() if attr else obj
        except (ImportError, AttributeError) as exc:
            raise click.BadParameter(f"{spec}: {exc}", param_hint="--plugin") from exc
        record = kernel.plugins.add_plugin(obj, spec)
        if record.status != "ok":
            raise click.BadParameter(f"{spec}: {record.error}", param_hint="--plugin")


@click.command()
@click.option(
    "--concurrency",
    default=2,
    show_default=True,
    help="Jobs this worker runs at once (syncs, agent runs, workflow runs).",
)
@click.option("--name", default=None, help="Worker name (default host:pid).")
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="MODULE[:FACTORY]",
    help="Register a plugin that is not installed (as nyla serve --plugin).",
)
def worker(concurrency: int, name: str | None, plugins: tuple[str, ...]) -> None:
    """Work the job queue (PostgreSQL, procrastinate) until stopped."""
    from nyla.jobs.queue import ProcrastinateRunner
    from nyla.kernel import Kernel

    kernel = Kernel(settings={"jobs": "procrastinate"})
    add_plugins(kernel, plugins)

    async def main() -> None:
        runner = kernel.jobs
        assert isinstance(runner, ProcrastinateRunner)
        try:
            await runner.run_worker(concurrency=concurrency, name=name)
        finally:
            await kernel.aclose()

    run_async(main())
