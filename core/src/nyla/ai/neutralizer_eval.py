"""Precision and recall of a neutralizer on a labelled set (``tests/data/neutralizer_labelled.tsv``).

Each line is ``lang<TAB>category<TAB>value<TAB>text`` (``\\n`` in the text is a newline); a
line holding several values lists them as ``NAME|DOB`` and ``Anna Meier|14.03.1981``.
``CLEAN`` lines hold no personal data. A labelled value counts as *found* when findings cover
all of it (whatever their category: what matters is that it does not leave); a finding is a
*true positive* when it overlaps a labelled value, a false positive otherwise. The
false-positive rate is the share of clean lines with at least one finding.

``python -m nyla.ai.neutralizer_eval [path ...]`` prints the table as Markdown.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_SET = Path("tests/data/neutralizer_labelled.tsv")
#: names, dates of birth and passport/ID numbers in context, and clean business text
CONTEXT_SET = Path("tests/data/pii_in_context.tsv")


@dataclass
class Scores:
    """Counts per category: labelled values, found values, findings, true-positive findings;
    and how many clean lines had a finding."""

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

    def clean_flag_rate(self) -> float:
        """Share of clean lines in which anything was found (the false-positive rate on text
        without personal data)."""
        clean = self.lines["clean"]
        return self.lines["clean flagged"] / clean if clean else 0.0


#: one labelled line: language, categories, values (as many as categories), text
Row = tuple[str, tuple[str, ...], tuple[str, ...], str]


def read_set(path: Path) -> list[Row]:
    """``(lang, categories, values, text)`` of every line (``CLEAN`` lines: ``("CLEAN",)``
    and no values)."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        lang, category, value, text = line.split("\t", 3)
        categories = tuple(category.split("|"))
        values = tuple(v.replace("\\n", "\n") for v in value.split("|")) if value else ()
        if categories != ("CLEAN",) and len(values) != len(categories):
            raise ValueError(
                f"{path.name}:{number}: {len(categories)} categories, {len(values)} values"
            )
        rows.append((lang, categories, values, text.replace("\\n", "\n")))
    return rows


def _spans(text: str, values: tuple[str, ...]) -> list[tuple[int, int]]:
    spans = []
    for value in values:
        start = text.find(value)
        if start < 0:
            raise ValueError(f"labelled value {value!r} is not in its line {text!r}")
        spans.append((start, start + len(value)))
    return spans


def _covered(span: tuple[int, int], findings: list[Any]) -> bool:
    covered: set[int] = set()
    for f in findings:
        covered.update(range(max(f.start, span[0]), min(f.end, span[1])))
    return len(covered) == span[1] - span[0]


def evaluate(find: Callable[[str], list[Any]], *paths: Path) -> Scores:
    """Score ``find(text) -> findings`` on the labelled sets at ``paths`` (default: the
    kernel's set)."""
    scores = Scores()
    for path in paths or (DEFAULT_SET,):
        for lang, categories, values, text in read_set(path):
            _score_line(scores, find(text), lang, categories, values, text)
    return scores


def _score_line(
    scores: Scores,
    findings: list[Any],
    lang: str,
    categories: tuple[str, ...],
    values: tuple[str, ...],
    text: str,
) -> None:
    spans = _spans(text, values)
    if not spans:
        scores.lines["clean"] += 1
        scores.lines["clean flagged"] += bool(findings)
    else:
        scores.lines["positive"] += 1
    for category, span in zip(categories if spans else (), spans, strict=True):
        scores.labelled[category] += 1
        if _covered(span, findings):
            scores.found[category] += 1
        else:
            scores.missed.append(f"{lang} {category} {text[span[0] : span[1]]!r}: {text!r}")
    for f in findings:
        scores.findings[f.category] += 1
        if any(f.start < b and f.end > a for a, b in spans):
            scores.correct[f.category] += 1
        else:
            scores.false_positives.append(f"{f.category} {f.value!r} in {text!r}")


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
    lines.append(
        f"\nclean lines with a finding: {scores.lines['clean flagged']} of "
        f"{scores.lines['clean']} ({scores.clean_flag_rate():.1%})"
    )
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a report command
    from nyla.ai.default_neutralizer import DefaultNeutralizer

    result = evaluate(DefaultNeutralizer().find, *(Path(a) for a in sys.argv[1:]))
    print(f"{result.lines['positive']} positive and {result.lines['clean']} clean lines\n")
    print(markdown(result))
    for line in result.missed:
        print("missed:", line)
    for line in result.false_positives:
        print("false positive:", line)
