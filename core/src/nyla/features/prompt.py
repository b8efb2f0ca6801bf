"""The data agent's system prompt: a generic header with the tables and their field types,
generic rules, and the domain block (the compiled ontology, or the legacy domain hints when the
feature has none or ``NYLA_DISABLE_FEATURE_ONTOLOGY=1``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from nyla.features.ontology_compiler import compile_ontology_to_prompt
from nyla.models.ontology import OntologyDescriptor

GENERIC_RULES = """\
## Rules
1. Use only the tables and fields listed above; call browseTable when unsure of a field.
2. Never SUM or AVG fields that are already aggregated — balances and totals such as
   closing_balance, opening_balance, debit_total, credit_total (anything ending in _balance
   or _total). Read them per period with queryTable instead.
3. Filter as narrowly as the question allows; the filters of one call are combined with AND.
4. If a tool answers with an error and errorDetails (code, field, suggestion, hint), repair
   the call with the suggestion and try again.
5. Answer with the numbers you computed from tool results (with the currency); never guess
   a number that no tool returned.
"""


def temporal_context(now: datetime | None = None, timezone: str = "UTC") -> str:
    """The date/time block, so relative dates ("last month", "Q1") resolve correctly."""
    try:
        tz = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        tz, timezone = ZoneInfo("UTC"), "UTC"
    now = (now or datetime.now(tz)).astimezone(tz)
    return (
        "## Current date and time\n"
        f"Now is {now:%A, %Y-%m-%d %H:%M} ({timezone}). Resolve relative dates against it.\n"
    )


def tables_block(tables: list[Any]) -> str:
    """Each table with its description and typed fields."""
    lines = ["## Tables"]
    for t in tables:
        lines.append(f"### {t.name}" + (f" — {t.description}" if t.description else ""))
        for f in t.fields:
            lines.append(f"- {f.name} ({f.type})" + (f": {f.description}" if f.description else ""))
    return "\n".join(lines) + "\n"


def build_schema_prompt(
    feature: Any,
    *,
    ontology: OntologyDescriptor | None,
    domain_hints: str = "",
    now: datetime | None = None,
    timezone: str = "UTC",
    temporal: bool = True,
) -> str:
    """The full system prompt of the data agent for ``feature``. ``ontology=None`` selects
    the legacy ``domain_hints`` block. ``temporal=False`` leaves out the date/time block (the
    agent loop adds its own)."""
    header = (
        f"You are the data agent of the feature '{feature.label}' ({feature.code}). You answer "
        "questions only from the feature's tables, with the tools browseTable, queryTable and "
        "aggregateTable.\n"
    )
    if ontology is not None:
        domain = compile_ontology_to_prompt(ontology)
    elif domain_hints.strip():
        domain = "## Domain hints\n" + domain_hints.strip() + "\n"
    else:
        domain = ""
    parts = [header]
    if temporal:
        parts.append(temporal_context(now, timezone))
    parts += [tables_block(feature.tables()), GENERIC_RULES]
    if domain:
        parts.append(domain)
    return "\n".join(parts)
