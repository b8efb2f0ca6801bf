"""``nyla run --detach`` (record the run and queue it for a ``nyla worker``), and what
``nyla runs follow`` and ``nyla runs resume`` do: print a durable run's stored events, run an
interrupted run again."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from nyla.commands.output import emit_json, json_line, run_async

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


async def print_events(
    kernel: Kernel, run_id: str, after: int, *, as_json: bool, printer: Callable[[Any], None]
) -> str | None:
    """Print ``run_id``'s stored events after ``after`` as they come (JSON lines, or through
    ``printer``), until it ends; its status then."""
    from nyla.models.agent import AgentEvent

    async for item in kernel.runs.follow(run_id, after, keepalive=3600):
        if item is None:
            continue
        if as_json:
            click.echo(json_line(item))
        else:
            printer(AgentEvent.model_validate(item))
    status, _ = await kernel.runs.read(run_id, 2**31 - 1)
    return status


def resume_run(
    kernel: Kernel,
    run_id: str,
    *,
    user_id: str,
    confirm_writes: bool,
    as_json: bool,
    printer: Callable[[Any], None],
) -> tuple[str, str | None]:
    """Run the interrupted run ``run_id`` of ``user_id`` again (:mod:`nyla.agent.run_resume`)
    here, or on a worker with ``NYLA_JOBS=procrastinate``, printing its events as they are
    stored; the new run's id and its status at the end."""
    from nyla.agent import run_resume

    async def go() -> tuple[str, str | None]:
        try:
            again = await run_resume.resumption(
                kernel.runs, run_id, user_id=user_id, confirm_writes=confirm_writes
            )
            context = await kernel.agent.user_context(again.base_context())
            row = await run_resume.record_resumed(kernel.runs, again, context)
            task = await kernel.runs.launch(row)
            if not as_json:
                click.echo(f"run {row.run_id} resumes {run_id}", err=True)
            status = await print_events(kernel, row.run_id, 0, as_json=as_json, printer=printer)
            if task is not None:
                await task
            return row.run_id, status
        finally:
            await kernel.aclose()

    try:
        return run_async(go())
    except run_resume.NotYourRun:
        raise click.ClickException(
            f"run {run_id!r} belongs to another user than {user_id!r}: pass its owner with --user"
        ) from None
    except run_resume.RunNotFound:
        raise click.ClickException(f"no run {run_id!r}") from None
    except run_resume.UnfinishedWrites as exc:
        names = ", ".join(f"{w.get('toolName')} (call {w.get('callId')})" for w in exc.writes)
        raise click.ClickException(
            f"run {run_id!r} started writes that may or may not have taken effect: {names}; "
            "check them, then resume with --confirm-writes"
        ) from None
    except run_resume.RunNotResumable as exc:
        raise click.ClickException(str(exc)) from None
