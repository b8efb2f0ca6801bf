"""The benchmark report as Markdown and JSON files (default under ``reports/``) and as a
terminal table."""

from __future__ import annotations

import json
import re
from pathlib import Path

from nyla.eval.harness import EvalReport

DEFAULT_DIR = Path("reports")


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f} %"


def summary_rows(report: EvalReport) -> list[list[str]]:
    """One row per mode: the figures of the seeds' benchmark table."""
    return [
        [
            s.mode,
            _pct(s.accuracy),
            _pct(s.pattern_compliance),
            str(s.validator_rejects),
            _pct(s.repair_conversion_rate),
            str(s.total_rounds),
            f"{s.total_cost_chf:.4f}" if report.cost_known else "–",
            str(s.errors),
        ]
        for s in report.summaries
    ]


SUMMARY_COLUMNS = [
    "Mode",
    "Accuracy",
    "Pattern compliance",
    "Validator rejects",
    "Repair conversion",
    "Rounds",
    "Cost (CHF)",
    "Errors",
]


def to_markdown(report: EvalReport) -> str:
    """The report as Markdown: summary table, per-question verdicts, and the misses."""
    lines = [
        f"# {report.feature} benchmark — {report.model}",
        "",
        f"- started: {report.started_at:%Y-%m-%d %H:%M:%S} UTC"
        + (f", finished: {report.finished_at:%H:%M:%S} UTC" if report.finished_at else ""),
        f"- questions: {len({r.id for r in report.results})} × modes: {', '.join(report.modes)}"
        f" (concurrency {report.concurrency}), instance `{report.instance_id}`",
    ]
    if report.ontology_disabled_by_env:
        lines.append("- NYLA_DISABLE_FEATURE_ONTOLOGY was set: phase2 ran on the legacy hints")
    lines += [
        "",
        "## Summary",
        "",
        "| " + " | ".join(SUMMARY_COLUMNS) + " |",
        "|" + "|".join("---" for _ in SUMMARY_COLUMNS) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in summary_rows(report)]
    lines += [
        "",
        "Repair conversion = validator rejections followed by a successful table call in the "
        "same run / validator rejections. The loop's same-tool counters: "
        + ", ".join(
            f"{s.mode} {s.repair_attempts} attempts / {s.success_after_repair} successes"
            for s in report.summaries
        )
        + ".",
        "",
        "## Questions",
        "",
        "| Question | " + " | ".join(report.modes) + " |",
        "|---|" + "|".join("---" for _ in report.modes) + "|",
    ]
    by_key = {(r.id, r.mode): r for r in report.results}
    for qid in dict.fromkeys(r.id for r in report.results):
        cells = []
        for mode in report.modes:
            r = by_key.get((qid, mode))
            if r is None:
                cells.append("")
                continue
            flags = "".join(
                ch if ok else "·"
                for ch, ok in (("P", r.pattern_ok), ("F", r.forbid_ok), ("N", r.numeric_ok))
            )
            mark = "✅" if r.accuracy_ok else "❌"
            extra = f" R{r.validation_failures}" if r.validation_failures else ""
            cells.append(f"{mark} {flags}{extra}")
        lines.append(f"| {qid} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "P = patternOk, F = forbidOk, N = numericOk, R = validator rejects.",
        "",
    ]
    misses = [r for r in report.results if not r.accuracy_ok]
    if misses:
        lines += ["## Misses", ""]
        for r in misses:
            why = r.error or ", ".join(r.rejection_codes) or r.status
            lines.append(
                f"- **{r.id}** ({r.mode}): expected {r.expected_numbers}, answer "
                f"“{_short(r.answer)}” [{why}]"
            )
        lines.append("")
    return "\n".join(lines)


def _short(text: str, limit: int = 160) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def write_report(report: EvalReport, out_dir: Path | None = None) -> tuple[Path, Path]:
    """Write ``<feature>-benchmark-<timestamp>.md`` and ``.json``; returns both paths."""
    out_dir = Path(out_dir or DEFAULT_DIR)
    out_dir.mkdir(parents=True, exist_ok=True)
    safe_model = re.sub(r"[^A-Za-z0-9_.-]+", "_", report.model)
    stem = f"{report.feature}-benchmark-{safe_model}-{report.started_at:%Y%m%d-%H%M%S}"
    md, js = out_dir / f"{stem}.md", out_dir / f"{stem}.json"
    md.write_text(to_markdown(report), encoding="utf-8")
    js.write_text(json.dumps(report.to_wire(), indent=2, ensure_ascii=False), encoding="utf-8")
    return md, js
