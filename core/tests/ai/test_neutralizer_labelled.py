"""The default neutralizer on the labelled set in tests/data (issue 12): at least 150 positive
and 60 clean lines in German, French and English, and the precision/recall it must keep."""

from __future__ import annotations

from pathlib import Path

from nyla.ai.default_neutralizer import DefaultNeutralizer
from nyla.ai.neutralizer_eval import evaluate, markdown, read_set

SET = Path(__file__).resolve().parents[3] / "tests" / "data" / "neutralizer_labelled.tsv"


def test_the_labelled_set_is_large_enough_in_three_languages():
    rows = read_set(SET)
    positive = [r for r in rows if r[1] != "CLEAN"]
    clean = [r for r in rows if r[1] == "CLEAN"]
    assert len(positive) >= 150 and len(clean) >= 60
    assert {r[0] for r in positive} == {r[0] for r in clean} == {"de", "fr", "en"}


def test_precision_and_recall_hold():
    scores = evaluate(DefaultNeutralizer().find, SET)
    table = markdown(scores)
    assert scores.recall() >= 0.95, table + "\n" + "\n".join(scores.missed)
    assert scores.precision() >= 0.97, table + "\n" + "\n".join(scores.false_positives)
    for category in ("EMAIL", "IBAN", "PHONE", "NAME", "ADDRESS", "DOB", "IDNUMBER"):
        assert scores.recall(category) >= 0.85, table
