"""The trustee benchmark questions with expected numbers computed from the seeded data."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import yaml
from pydantic import Field

from nyla.sdk import BenchmarkQuestion
from nyla_feature_trustee.expectations import expected_numbers
from nyla_feature_trustee.generator import DEFAULT_SEED, DEFAULT_YEAR, generate


class TrusteeQuestion(BenchmarkQuestion):
    """A benchmark question with its ``expect`` block and a reference ``solution`` (tool
    calls and how the answer is read from their results) for the offline eval policies."""

    expect: dict[str, Any] = Field(default_factory=dict)
    solution: dict[str, Any] | None = None


def load_raw() -> list[dict[str, Any]]:
    """The questions file as parsed YAML."""
    text = resources.files("nyla_feature_trustee").joinpath("questions.yaml").read_text("utf-8")
    return list(yaml.safe_load(text))


@lru_cache(maxsize=4)
def load_questions(
    seed: int = DEFAULT_SEED, year: int = DEFAULT_YEAR
) -> tuple[TrusteeQuestion, ...]:
    """Every question with ``expected_numbers`` computed over ``generate(seed, year)``."""
    data = generate(seed, year)
    out = []
    for raw in load_raw():
        q = TrusteeQuestion.model_validate(raw)
        q.expected_numbers = expected_numbers(data, q.expect)
        out.append(q)
    return tuple(out)
