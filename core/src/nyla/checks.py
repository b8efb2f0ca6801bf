"""Static contract checks over a plugin host: what ``nyla plugins check`` runs and the contract
suites reuse. Each problem names the plugin, the object and what is wrong."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nyla.plugin_answers import check_tool_schema
from nyla.plugins import PluginHost

TABLE_TOOLS = {"browseTable", "queryTable", "aggregateTable"}


@dataclass(frozen=True)
class CheckProblem:
    """One failed check."""

    plugin: str
    subject: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"plugin": self.plugin, "subject": self.subject, "message": self.message}


def check_model_spec(spec: Any, provider_id: str) -> list[str]:
    """Problems with one model spec (empty when complete)."""
    out = []
    if not spec.id.startswith(f"{provider_id}:"):
        out.append(f"model id {spec.id!r} must start with '{provider_id}:'")
    if spec.provider != provider_id:
        out.append(f"model {spec.id!r} names provider {spec.provider!r}, not {provider_id!r}")
    if not spec.operation_types:
        out.append(f"model {spec.id!r} lists no operation types")
    if spec.context_window <= 0:
        out.append(f"model {spec.id!r} has no context window")
    if spec.price_input_chf_per_mtok is None or spec.price_output_chf_per_mtok is None:
        out.append(f"model {spec.id!r} has no price (CHF per million tokens)")
    if "embedding" in spec.operation_types and not spec.capabilities.embedding_dimensions:
        out.append(f"embedding model {spec.id!r} does not state its dimensions")
    if spec.capabilities.tool_choice and not spec.capabilities.tools:
        out.append(f"model {spec.id!r} declares tool_choice but no tools")
    return out


def check_tool(tool: Any) -> list[str]:
    """Problems with one tool: its name, its description and its JSON schema."""
    out = check_tool_schema(tool)
    if not tool.description.strip():
        out.append(f"tool {tool.name!r} has no description")
    return out


def check_ontology(feature: Any) -> list[str]:
    """Problems with a feature's ontology: every reference must name a real table/field."""
    ontology = feature.get_agent_ontology()
    if ontology is None:
        return []
    tables = {t.name: {f.name for f in t.fields} for t in feature.tables()}
    entities = {e.name: e for e in ontology.entities}
    out = []

    def field_ok(table: str, field: str, where: str) -> None:
        if table not in tables:
            out.append(f"{where}: unknown table {table!r}")
        elif field not in tables[table]:
            out.append(f"{where}: unknown field {table}.{field}")

    for e in ontology.entities:
        if e.table not in tables:
            out.append(f"entity {e.name}: unknown table {e.table!r}")
        if e.parent_entity and e.parent_entity not in entities:
            out.append(f"entity {e.name}: unknown parent entity {e.parent_entity!r}")
        for f in e.filters:
            field_ok(e.table, f.field, f"entity {e.name} filter")
        for k in e.key_fields:
            field_ok(e.table, k, f"entity {e.name} key")
    for r in ontology.relations:
        src, dst = entities.get(r.from_entity), entities.get(r.to_entity)
        if src is None or dst is None:
            out.append(f"relation {r.from_entity}->{r.to_entity}: unknown entity")
            continue
        field_ok(src.table, r.via_field, f"relation {r.from_entity}->{r.to_entity}")
        field_ok(dst.table, r.to_field, f"relation {r.from_entity}->{r.to_entity}")
    for c in ontology.constraints:
        if c.table not in tables:
            out.append(f"constraint {c.kind}: unknown table {c.table!r}")
            continue
        for f in c.fields:
            field_ok(c.table, f, f"constraint {c.kind}")
    for p in ontology.canonical_patterns:
        for step in p.steps:
            if step.tool not in TABLE_TOOLS:
                out.append(f"pattern {p.name}: unknown tool {step.tool!r}")
            table = step.arguments.get("table")
            if isinstance(table, str) and table not in tables:
                out.append(f"pattern {p.name}: unknown table {table!r}")
    return out


def check_host(host: PluginHost, only: str | None = None) -> list[CheckProblem]:
    """Run every static check; ``only`` restricts to one plugin name."""
    problems: list[CheckProblem] = []

    def owner(kind: str, key: str) -> str:
        return host.owner_of(kind, key) or "?"

    for record in host.records.values():
        if only and record.name != only:
            continue
        if record.status == "failed":
            problems.append(CheckProblem(record.name, "load", record.error or "failed"))
        for warning in record.warnings:
            problems.append(CheckProblem(record.name, "load", warning))
    for pid, provider in host.providers.items():
        name = owner("providers", pid)
        if only and name != only:
            continue
        try:
            specs = provider.models()
        except Exception as exc:
            problems.append(CheckProblem(name, f"provider {pid}", f"models() raised {exc!r}"))
            continue
        if not specs:
            problems.append(CheckProblem(name, f"provider {pid}", "lists no models"))
        for spec in specs:
            for msg in check_model_spec(spec, pid):
                problems.append(CheckProblem(name, f"provider {pid}", msg))
    for tid, toolbox in host.toolboxes.items():
        name = owner("toolboxes", tid)
        if only and name != only:
            continue
        for tool in toolbox.tools:
            for msg in check_tool(tool):
                problems.append(CheckProblem(name, f"toolbox {tid}", msg))
    for code, feature in host.features.items():
        name = owner("features", code)
        if only and name != only:
            continue
        try:
            msgs = check_ontology(feature)
        except Exception as exc:
            msgs = [f"ontology check raised {exc!r}"]
        for msg in msgs:
            problems.append(CheckProblem(name, f"feature {code}", msg))
    return problems
