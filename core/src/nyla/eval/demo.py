"""The feature-data-agent step of ``make demo``: the trustee benchmark in all three modes,
offline, with the scripted policy that first sums a balance and then repairs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table

if TYPE_CHECKING:
    from nyla.kernel import Kernel

DEMO_MODEL = "eval:trap-regression"


async def run_demo(kernel: Kernel, console: Any) -> None:
    """Seed a trustee instance, run every benchmark question in baseline, phase1 and phase2,
    print the summary and write the Markdown + JSON report under ``reports/``."""
    from nyla.eval.harness import run_eval
    from nyla.eval.report import SUMMARY_COLUMNS, summary_rows, write_report

    if "trustee" not in kernel.plugins.features:
        console.print("the trustee feature plugin is not installed: skipped")
        return
    with console.status("seeding the trustee instance and running 3 modes × all questions…"):
        report = await run_eval(kernel, "trustee", model=DEMO_MODEL, instance_id="demo-trustee")
    table = Table(
        title=f"trustee benchmark — {DEMO_MODEL} (a scripted policy, no network)",
        header_style="bold",
    )
    for column in SUMMARY_COLUMNS:
        table.add_column(column)
    for row in summary_rows(report):
        table.add_row(*row)
    console.print(table)
    markdown, js = write_report(report)
    console.print(
        f"report: {markdown} and {js}. With a provider key, run the same benchmark "
        "against a real model: nyla eval run trustee --model openai:gpt-4.1-mini"
    )
