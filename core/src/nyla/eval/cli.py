"""``nyla eval``: benchmark a feature's data agent (``nyla eval run trustee --model ID``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from nyla.commands.output import emit_json, json_option, run_async, table
from nyla.commands.recording import open_tape, tape_drift, tape_options


@click.group("eval")
def eval_group() -> None:
    """Benchmark a feature's data agent (questions -> runs -> Markdown + JSON report)."""


@eval_group.command("run")
@click.argument("feature")
@click.option(
    "--model", required=True, help="Model id, e.g. openai:gpt-4.1-mini or eval:reference-replay."
)
@click.option(
    "--modes",
    default="baseline,phase1,phase2",
    show_default=True,
    help="Comma-separated: baseline (no validator, hints), phase1 (validator, hints), "
    "phase2 (validator, ontology).",
)
@click.option("--concurrency", default=4, show_default=True, help="Questions run at once.")
@click.option("--instance", "instance_id", help="Feature instance (default eval-<feature>).")
@click.option("--questions", "question_ids", help="Only these question ids (comma-separated).")
@click.option("--max-rounds", default=12, show_default=True, help="Rounds per question.")
@click.option(
    "--max-cost-chf",
    "max_cost_chf",
    type=click.FloatRange(min=0),
    help="Budget per question in CHF.",
)
@click.option("--no-seed", is_flag=True, help="Keep the instance's data instead of reseeding.")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Directory of the Markdown and JSON report.",
)
@tape_options(directory=True)
@json_option
def run(as_json: bool, **options: Any) -> None:
    """Run every benchmark question of FEATURE in each mode and write the report.

    --record DIR keeps every model call (one file per question and mode); --replay DIR
    re-scores that recording offline (docs/replay.md)."""
    run_async(_run(as_json=as_json, **options))


async def _run(
    *,
    feature: str,
    model: str,
    modes: str,
    concurrency: int,
    instance_id: str | None,
    question_ids: str | None,
    max_rounds: int,
    max_cost_chf: float | None,
    no_seed: bool,
    out_dir: Path,
    as_json: bool,
    record: Path | None,
    replay: Path | None,
) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from nyla.errors import NylaError
    from nyla.eval.harness import parse_modes, run_eval
    from nyla.eval.report import SUMMARY_COLUMNS, summary_rows, write_report
    from nyla.kernel import Kernel

    kernel = Kernel()
    tape = open_tape(kernel, record, replay, directory=True)
    try:
        mode_list = parse_modes(modes)
        ids = [q.strip() for q in question_ids.split(",")] if question_ids else None
        questions = kernel.features.feature(feature).benchmark_questions()
        total = len([q for q in questions if not ids or q.id in ids]) * len(mode_list)
        console = Console(file=sys.stderr)
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[last]}"),
            console=console,
            transient=as_json,
        ) as progress:
            task = progress.add_task(f"{feature} × {model}", total=total, last="")

            def advance(result: Any) -> None:
                mark = "ok" if result.accuracy_ok else "miss"
                progress.update(task, advance=1, last=f"{result.mode}/{result.id}: {mark}")

            report = await run_eval(
                kernel,
                feature,
                model=model,
                modes=mode_list,
                concurrency=concurrency,
                instance_id=instance_id,
                question_ids=ids,
                seed=not no_seed,
                max_rounds=max_rounds,
                max_cost_chf=max_cost_chf,
                on_progress=advance,
            )
        md, js = write_report(report, out_dir)
    except NylaError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        await kernel.aclose()
    drift = tape_drift(tape)
    if as_json:
        extra = {"replayDrift": drift} if drift else {}
        emit_json(
            {**report.to_wire(), "reportFiles": {"markdown": str(md), "json": str(js)}, **extra}
        )
        if drift:
            sys.exit(1)
        return
    table(f"{feature} benchmark — {model}", SUMMARY_COLUMNS, summary_rows(report))
    click.echo(f"report: {md}\n        {js}")
    if drift:
        raise click.ClickException(drift)


@eval_group.command("questions")
@click.argument("feature")
@json_option
def questions(feature: str, as_json: bool) -> None:
    """List FEATURE's benchmark questions with their expected numbers."""
    from nyla.errors import NylaError
    from nyla.kernel import Kernel

    try:
        items = Kernel().features.feature(feature).benchmark_questions()
    except NylaError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        emit_json([q.to_wire() for q in items])
        return
    table(
        f"{feature} benchmark questions",
        ["Id", "Pattern", "Tags", "Expected", "Question"],
        [
            [
                q.id,
                q.pattern or "",
                ", ".join(q.tags),
                ", ".join(f"{n:g}" for n in q.expected_numbers),
                q.question,
            ]
            for q in items
        ],
    )
