"""The benchmark harness: a feature's questions through its data agent in the modes
baseline / phase1 / phase2, scored (patternOk, forbidOk, numericOk, accuracyOk), aggregated
and written as Markdown + JSON."""

from __future__ import annotations

from nyla.eval.harness import MODES, EvalReport, ModeSummary, QuestionResult, run_eval
from nyla.eval.report import to_markdown, write_report

__all__ = [
    "MODES",
    "EvalReport",
    "ModeSummary",
    "QuestionResult",
    "run_eval",
    "to_markdown",
    "write_report",
]
