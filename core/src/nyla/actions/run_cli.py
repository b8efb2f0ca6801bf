"""``nyla workflows run|resume|runs|show-run|cancel``: workflow runs from the command line.
``run`` starts a run and follows its events until it ends (in this process by default; on
the queue's workers with ``NYLA_JOBS=procrastinate``); ``resume`` picks up the runs a killed
process left and follows them."""

from __future__ import annotations

from typing import Any

import click

from nyla.commands.output import emit_json, json_option, run_async, safe_text, table

_user_option = click.option(
    "--user", "user_id", default=None, help="Whose workflows (default: $NYLA_USER or local)."
)


def _context(user_id: str | None) -> Any:
    from nyla.identity import default_user
    from nyla.models.agent import RunContext

    return RunContext(user_id=user_id or default_user())


def _on_kernel(work: Any) -> Any:
    """``await work(kernel)`` on a fresh kernel, closed afterwards; a workflow or run that is
    not the user's, or a workflow that cannot run, is a clear error."""
    from nyla.actions.runs import WorkflowNotRunnableError, WorkflowRunNotFoundError
    from nyla.actions.workflows import WorkflowNotFoundError
    from nyla.kernel import Kernel

    async def go() -> Any:
        kernel = Kernel()
        try:
            return await work(kernel)
        finally:
            await kernel.aclose()

    try:
        return run_async(go())
    except (WorkflowNotFoundError, WorkflowRunNotFoundError) as exc:
        raise click.ClickException(f"{exc.args[0]} (nyla workflows list shows yours)") from None
    except WorkflowNotRunnableError as exc:
        raise click.ClickException(str(exc)) from None
    except PermissionError as exc:  # a conversation the user may not change
        raise click.ClickException(str(exc)) from None


def _progress(event: Any) -> str:
    """One line per event of a run."""
    node = f"{event.node_id}: " if event.node_id else ""
    text = safe_text(event.text.replace("\n", " "))
    if len(text) > 120:
        text = text[:117] + "..."
    return f"[{event.seq:>3}] {event.type:<13} {node}{text}"


async def _follow(kernel: Any, run_id: str, context: Any, as_json: bool) -> Any:
    """Print the run's events until it ends; the ended run."""
    async for event in kernel.workflow_runs.follow(run_id, context):
        if event is not None and not as_json:
            click.echo(_progress(event))
    return await kernel.workflow_runs.get(run_id, context)


def _report(run: Any, events: list[Any], as_json: bool) -> None:
    if as_json:
        emit_json({**run.to_wire(), "events": [e.to_wire() for e in events]})
        return
    _nodes(run)
    click.echo(f"run {run.id}: {run.status} (CHF {run.cost_chf:.4f})")
    if run.error:
        click.echo(f"error: {safe_text(run.error)}")


def _nodes(run: Any) -> None:
    table(
        f"run {run.id} of {run.workflow_name}",
        ["node", "action", "status", "attempts", "output / error"],
        [
            (
                n.node_id,
                f"{n.method}.{n.action}",
                n.status,
                n.attempts,
                (n.error or (n.output.text if n.output else ""))[:80],
            )
            for n in run.nodes
        ],
    )


def _exit_code(run: Any) -> None:
    if run.status != "done":
        raise SystemExit(1)


@click.command("run")
@click.argument("workflow_id")
@_user_option
@click.option("--max-attempts", type=click.IntRange(1, 10), default=2, show_default=True)
@click.option("--node-timeout", type=click.FloatRange(0, 3600, min_open=True), default=None)
@click.option("--max-cost", "max_cost_chf", type=click.FloatRange(0), default=None, help="CHF.")
@click.option("--model", default=None, help="The model the run's AI actions use.")
@click.option(
    "--conversation",
    "conversation_id",
    default=None,
    help="The user's conversation the nodes' documents are bound to.",
)
@json_option
def workflows_run(
    workflow_id: str,
    user_id: str | None,
    max_attempts: int,
    node_timeout: float | None,
    max_cost_chf: float | None,
    model: str | None,
    conversation_id: str | None,
    as_json: bool,
) -> None:
    """Run a workflow node by node and show its progress; exit 1 unless it ends done."""
    from nyla.models.workflow_runs import RunOptions

    context = _context(user_id)
    if conversation_id is not None:
        context = context.model_copy(update={"workflow_id": conversation_id})
    options = RunOptions(
        max_attempts=max_attempts,
        node_timeout_s=node_timeout,
        max_cost_chf=max_cost_chf,
        model=model,
    )

    async def go(kernel: Any) -> Any:
        run = await kernel.workflow_runs.start(workflow_id, context, options)
        if not as_json:
            click.echo(f"run {run.id} of workflow {workflow_id} started")
            if kernel.jobs_backend == "procrastinate":
                click.echo(
                    "queued for a nyla worker (NYLA_JOBS=procrastinate); Ctrl-C stops watching"
                )
        ended = await _follow(kernel, run.id, context, as_json)
        return ended, await kernel.workflow_runs.events(run.id, context)

    run, events = _on_kernel(go)
    _report(run, events, as_json)
    _exit_code(run)


@click.command("resume")
@click.argument("run_id", required=False)
@_user_option
@json_option
def workflows_resume(run_id: str | None, user_id: str | None, as_json: bool) -> None:
    """Pick up the runs a killed process left (boot recovery) and follow RUN_ID (or each of
    the user's that went on) until it ends; finished nodes are not run again."""
    context = _context(user_id)

    async def go(kernel: Any) -> Any:
        await kernel.jobs.start()  # boot recovery resumes the open runs of dead workers
        if run_id is not None:
            ids = [run_id]
        else:
            ids = [r.id for r in await kernel.workflow_runs.list_for(context) if not r.ended]
        return [
            (
                await _follow(kernel, i, context, as_json),
                await kernel.workflow_runs.events(i, context),
            )
            for i in ids
        ]

    ended = _on_kernel(go)
    if not ended and not as_json:
        click.echo("no open workflow runs")
    for run, events in ended:
        _report(run, events, as_json)
    for run, _ in ended:
        _exit_code(run)


@click.command("runs")
@click.option("--workflow", "workflow_id", default=None, help="Only the runs of this workflow.")
@_user_option
@json_option
def workflows_runs(workflow_id: str | None, user_id: str | None, as_json: bool) -> None:
    """The user's workflow runs, newest first."""
    context = _context(user_id)
    runs = _on_kernel(
        lambda kernel: kernel.workflow_runs.list_for(context, workflow_id=workflow_id)
    )
    if as_json:
        emit_json({"runs": [r.to_wire() for r in runs]})
        return
    table(
        "workflow runs",
        ["run", "workflow", "status", "nodes done", "cost CHF", "started"],
        [
            (
                r.id,
                r.workflow_name,
                r.status,
                f"{sum(n.status == 'done' for n in r.nodes)}/{len(r.nodes)}",
                f"{r.cost_chf:.4f}",
                r.created_at.strftime("%Y-%m-%d %H:%M:%S") if r.created_at else "-",
            )
            for r in runs
        ],
    )


@click.command("show-run")
@click.argument("run_id")
@_user_option
@json_option
def workflows_show_run(run_id: str, user_id: str | None, as_json: bool) -> None:
    """One run: its nodes (status, attempts, output or error) and its events."""
    context = _context(user_id)

    async def go(kernel: Any) -> Any:
        return (
            await kernel.workflow_runs.get(run_id, context),
            await kernel.workflow_runs.events(run_id, context),
        )

    run, events = _on_kernel(go)
    if as_json:
        emit_json({**run.to_wire(), "events": [e.to_wire() for e in events]})
        return
    _nodes(run)
    for event in events:
        click.echo(_progress(event))
    click.echo(f"run {run.id}: {run.status} (CHF {run.cost_chf:.4f})")


@click.command("cancel")
@click.argument("run_id")
@_user_option
def workflows_cancel(run_id: str, user_id: str | None) -> None:
    """Cancel an open run: the node under way stops, the rest never runs."""
    context = _context(user_id)
    cancelled = _on_kernel(lambda kernel: kernel.workflow_runs.cancel(run_id, context))
    click.echo(f"run {run_id} cancelled" if cancelled else f"run {run_id} had ended")


COMMANDS = [workflows_run, workflows_resume, workflows_runs, workflows_show_run, workflows_cancel]
