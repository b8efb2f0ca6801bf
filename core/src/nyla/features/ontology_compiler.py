"""``compile_ontology_to_prompt``: an :class:`OntologyDescriptor` as the domain block of the
data agent's system prompt.

Deterministic: the same descriptor gives byte-identical text (declared order is kept, JSON
arguments are rendered with sorted keys, nothing depends on time or hashing). Entities,
relations, constraints and canonical patterns — the latter as worked examples of tool calls.
"""

from __future__ import annotations

import json
from typing import Any

from nyla.models.ontology import ConstraintKind, Entity, OntologyDescriptor


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def _entity_line(e: Entity, indent: str) -> str:
    where = " AND ".join(f"{f.field} {f.operator} {_json(f.value)}" for f in e.filters)
    head = f"{indent}- {e.name}"
    if e.parent_entity:
        head += f" (specializes {e.parent_entity})"
    head += f": table {e.table}"
    if where:
        head += f" WHERE {where}"
    if e.key_fields:
        head += f"; key {', '.join(e.key_fields)}"
    if e.description:
        head += f" — {e.description}"
    return head


def _entities(ontology: OntologyDescriptor) -> list[str]:
    children: dict[str | None, list[Entity]] = {}
    names = {e.name for e in ontology.entities}
    for e in ontology.entities:
        parent = e.parent_entity if e.parent_entity in names else None
        children.setdefault(parent, []).append(e)
    out: list[str] = []
    seen: set[str] = set()

    def walk(parent: str | None, depth: int) -> None:
        for e in children.get(parent, []):
            if e.name in seen:
                continue
            seen.add(e.name)
            out.append(_entity_line(e, "  " * depth))
            walk(e.name, depth + 1)

    walk(None, 0)
    # entities caught in a parent cycle still get rendered, flat
    out.extend(_entity_line(e, "") for e in ontology.entities if e.name not in seen)
    return out


def _constraint_line(c: Any) -> str:
    fields = ", ".join(c.fields)
    if c.kind == ConstraintKind.NEVER_AGGREGATE:
        text = (
            f"- NEVER_AGGREGATE {c.table}: {fields} — never SUM or AVG these fields; read "
            "them per row with queryTable"
        )
    elif c.kind == ConstraintKind.REQUIRES_FILTER_ON:
        text = (
            f"- REQUIRES_FILTER_ON {c.table}: {fields} — every queryTable/aggregateTable on "
            f"{c.table} must filter on {fields}"
        )
    elif c.kind == ConstraintKind.PREFERRED_TABLE_FOR_INTENT:
        text = f"- PREFERRED_TABLE_FOR_INTENT {c.table}"
        if fields:
            text += f" ({fields})"
        text += f" — use it for: {c.intent or 'its intent'}"
    else:  # pragma: no cover - future kinds still render
        text = f"- {c.kind} {c.table}: {fields}"
    if c.reason:
        text += f". Why: {c.reason}"
    return text


def compile_ontology_to_prompt(ontology: OntologyDescriptor) -> str:
    """The domain block for the data agent's prompt (deterministic)."""
    lines = [f"## Domain ontology: {ontology.feature_code} (version {ontology.version})", ""]
    if ontology.entities:
        lines += ["### Entities", *_entities(ontology), ""]
    if ontology.relations:
        lines.append("### Relations")
        for r in ontology.relations:
            text = (
                f"- {r.from_entity} -> {r.to_entity} ({r.cardinality.value} via "
                f"{r.via_field} = {r.to_entity}.{r.to_field})"
            )
            if r.description:
                text += f": {r.description}"
            lines.append(text)
        lines += [
            "  Join by querying one table, then filtering the other on the joining field.",
            "",
        ]
    if ontology.constraints:
        lines += ["### Constraints (enforced by the validator)"]
        lines += [_constraint_line(c) for c in ontology.constraints]
        lines.append("")
    if ontology.canonical_patterns:
        lines += [
            "### Canonical patterns (worked examples; replace <placeholders>)",
        ]
        for p in ontology.canonical_patterns:
            lines.append(f"#### {p.name}: {p.intent}")
            if p.description:
                lines.append(p.description)
            for i, step in enumerate(p.steps, start=1):
                lines.append(f"{i}. {step.tool} {_json(step.arguments)}")
                if step.note:
                    lines.append(f"   -> {step.note}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
