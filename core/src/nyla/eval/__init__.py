"""The benchmark harness: a feature's questions through its data agent in the modes
baseline / phase1 / phase2, scored (patternOk, forbidOk, numericOk, accuracyOk), aggregated
and written as Markdown + JSON.

The names load on first use, so that ``nyla eval --help`` imports no harness."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nyla.eval.harness import MODES, EvalReport, ModeSummary, QuestionResult, run_eval
    from nyla.eval.report import to_markdown, write_report

_EXPORTS = {
    "MODES": "nyla.eval.harness",
    "EvalReport": "nyla.eval.harness",
    "ModeSummary": "nyla.eval.harness",
    "QuestionResult": "nyla.eval.harness",
    "run_eval": "nyla.eval.harness",
    "to_markdown": "nyla.eval.report",
    "write_report": "nyla.eval.report",
}

__all__ = [
    "MODES",
    "EvalReport",
    "ModeSummary",
    "QuestionResult",
    "run_eval",
    "to_markdown",
    "write_report",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nyla.eval' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
