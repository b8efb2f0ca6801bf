"""Precision and recall of a neutralizer on a labelled set (``tests/data/neutralizer_labelled.tsv``).

Each line is ``lang<TAB>category<TAB>value<TAB>text`` (``\\n`` in the text is a newline);
``CLEAN`` lines hold no personal data. A labelled value counts as *found* when findings cover
all of it (whatever their category: what matters is that it does not leave); a finding is a
*true positive* when it overlaps a labelled value, a false positive otherwise.

``python -m nyla.ai.neutralizer_eval [path]`` prints the table as Markdown.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_SET = Path("tests/data/neutralizer_labelled.tsv")


@dataclass
class Scores:
    """Counts per category: labelled values, found values, findings, true-positive findings."""

    labelled: Counter[str] = field(default_factory=Counter)
    found: Counter[str] = field(default_factory=Counter)
    findings: Counter[str] = field(default_factory=Counter)
    correct: Counter[str] = field(default_factory=Counter)
    lines: Counter[str] = field(default_factory=Counter)
    missed: list[str] = field(default_factory=list)
    false_positives: list[str] = field(default_factory=list)

    def recall(self, category: str | None = None) -> float:
        """Found / labelled values (of one category, or all)."""
        total = self.labelled[category] if category else sum(self.labelled.values())
        hit = self.found[category] if category else sum(self.found.values())
        return hit / total if total else 1.0

    def precision(self, category: str | None = None) -> float:
        """True-positive findings / findings (of one category, or all)."""
        total = self.findings[category] if category else sum(self.findings.values())
        hit = self.correct[category] if category else sum(self.correct.values())
        return hit / total if total else 1.0


def read_set(path: Path) -> list[tuple[str, str, str, str]]:
    """``(lang, category, value, text)`` of every line."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        lang, category, value, text = line.split("\t", 3)
        rows.append((lang, category, value.replace("\\n", "\n"), text.replace("\\n", "\n")))
    return rows


def evaluate(find: Callable[[str], list[Any]], path: Path = DEFAULT_SET) -> Scores:
    """Score ``find(text) -> findings`` on the labelled set at ``path``."""
    scores = Scores()
    for lang, category, value, text in read_set(path):
        findings = find(text)
        span = None
        if category != "CLEAN":
            start = text.find(value)
            if start < 0:
                raise ValueError(f"labelled value {value!r} is not in its line {text!r}")
            span = (start, start + len(value))
            scores.labelled[category] += 1
            scores.lines["positive"] += 1
            covered: set[int] = set()
            for f in findings:
                covered.update(range(max(f.start, span[0]), min(f.end, span[1])))
            if len(covered) == span[1] - span[0]:
                scores.found[category] += 1
            else:
                scores.missed.append(f"{lang} {category}: {text!r}")
        else:
            scores.lines["clean"] += 1
        for f in findings:
            scores.findings[f.category] += 1
            if span is not None and f.start < span[1] and f.end > span[0]:
                scores.correct[f.category] += 1
            else:
                scores.false_positives.append(f"{f.category} {f.value!r} in {text!r}")
    return scores


def markdown(scores: Scores) -> str:
    """The precision/recall table."""
    lines = [
        "| category | labelled | found | recall | findings | precision |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for category in sorted(set(scores.labelled) | set(scores.findings)):
        lines.append(
            f"| {category} | {scores.labelled[category]} | {scores.found[category]} | "
            f"{scores.recall(category):.1%} | {scores.findings[category]} | "
            f"{scores.precision(category):.1%} |"
        )
    lines.append(
        f"| **all** | {sum(scores.labelled.values())} | {sum(scores.found.values())} | "
        f"{scores.recall():.1%} | {sum(scores.findings.values())} | {scores.precision():.1%} |"
    )
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a report command
    from nyla.ai.default_neutralizer import DefaultNeutralizer

    result = evaluate(
        DefaultNeutralizer().find, Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SET
    )
    print(f"{result.lines['positive']} positive and {result.lines['clean']} clean lines\n")
    print(markdown(result))
    for line in result.missed:
        print("missed:", line)
    for line in result.false_positives:
        print("false positive:", line)
