"""``nyla run --detach``: record the run and queue it for a ``nyla worker``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from nyla.commands.output import emit_json, run_async

if TYPE_CHECKING:
    from nyla.kernel import Kernel
    from nyla.models.agent import AgentConfig, RunContext


def detach_run(
    kernel: Kernel,
    prompt: str,
    config: AgentConfig,
    context: RunContext,
    *,
    run_id: str,
    as_json: bool,
) -> None:
    """Record the run and queue it for a worker; print its id (or JSON) and return."""
    if kernel.jobs_backend != "procrastinate":
        raise click.ClickException(
            "--detach queues the run for a nyla worker: set NYLA_JOBS=procrastinate and start "
            "one (docs/host.md, Running more than one)"
        )

    async def go() -> str:
        try:
            prepared = await kernel.agent.user_context(context)
            row = await kernel.runs.create(prompt, config, prepared, run_id=run_id)
            await kernel.runs.launch(row)
            return row.run_id
        finally:
            await kernel.aclose()

    queued = run_async(go())
    if as_json:
        emit_json({"runId": queued, "status": "queued"})
        return
    click.echo(queued)
    click.echo(f"queued; follow it with: nyla runs follow {queued}", err=True)
