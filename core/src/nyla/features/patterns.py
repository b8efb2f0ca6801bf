"""Canonical patterns as concrete calls: placeholders (``"<YYYY-MM>"``, ``"<account>"``, ...)
replaced by sample values of the right type, so a pattern can be validated like a real call."""

from __future__ import annotations

import copy
import re
from typing import Any

from nyla.models.feature import FeatureTable
from nyla.models.ontology import PatternStep

_PLACEHOLDER = re.compile(r"^<[^<>]+>$")
SAMPLE_VALUES: dict[str, Any] = {
    "string": "2025-01",
    "integer": 1,
    "number": 1.0,
    "boolean": True,
    "date": "2025-01-31",
    "datetime": "2025-01-31T00:00:00",
}


def is_placeholder(value: Any) -> bool:
    """Whether ``value`` is a ``<placeholder>``."""
    return isinstance(value, str) and bool(_PLACEHOLDER.match(value.strip()))


def instantiate_step(step: PatternStep, tables: list[FeatureTable]) -> dict[str, Any]:
    """The step's arguments with every placeholder replaced by a typed sample value."""
    args = copy.deepcopy(step.arguments)
    types = {f.name: f.type for t in tables if t.name == args.get("table") for f in t.fields}
    for f in args.get("filters", []) or []:
        ftype = types.get(f.get("field"), "string")
        value = f.get("value")
        if isinstance(value, list):
            f["value"] = [SAMPLE_VALUES[ftype] if is_placeholder(v) else v for v in value]
        elif is_placeholder(value):
            f["value"] = SAMPLE_VALUES[ftype]
    for key in ("limit", "offset", "sampleRows", "sample_rows"):
        if is_placeholder(args.get(key)):
            args[key] = 5 if key != "offset" else 0
    return args
