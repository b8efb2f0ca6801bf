"""Contract suite for feature plugins."""

from __future__ import annotations

from typing import Any

from nyla.checks import TABLE_TOOLS, check_ontology
from nyla.testing.contract_base import PluginContract, _host_for


def _features(plugin: Any) -> list[Any]:
    host = _host_for(plugin)
    assert host.features, "no feature registered"
    return list(host.features.values())


def _required_filters(validator: Any, table: str) -> list[dict[str, Any]]:
    from nyla.features.patterns import SAMPLE_VALUES

    types = {f.name: f.type for f in validator.tables[table].fields}
    return [
        {"field": f, "op": "eq", "value": SAMPLE_VALUES[types.get(f, "string")]}
        for f, _ in validator.required_filters(table)
    ]


class FeatureContract(PluginContract):
    """Contract for feature plugins: tables; an ontology that references only real tables and
    fields, whose canonical patterns validate and whose constraints the validator enforces;
    a deterministic compiled prompt; well-formed benchmark questions."""

    def test_feature_has_tables(self, plugin: Any) -> None:
        for feature in _features(plugin):
            tables = feature.tables()
            assert tables, f"feature {feature.code} has no tables"
            for t in tables:
                assert t.fields, f"table {t.name} has no fields"

    def test_ontology_references_are_real(self, plugin: Any) -> None:
        for feature in _features(plugin):
            problems = check_ontology(feature)
            assert problems == [], f"feature {feature.code}: " + "; ".join(problems)

    def test_provider_exposes_every_table(self, plugin: Any) -> None:
        for feature in _features(plugin):
            sa_tables = feature.data_provider().sqlalchemy_tables()
            for t in feature.tables():
                assert t.name in sa_tables, f"{t.name} has no SQLAlchemy table"
                columns = set(sa_tables[t.name].c.keys())
                assert "feature_instance_id" in columns, f"{t.name} is not keyed by instance"
                missing = {f.name for f in t.fields} - columns
                assert not missing, f"{t.name}: declared fields without column: {missing}"

    def test_every_canonical_pattern_validates(self, plugin: Any) -> None:
        from nyla.features.patterns import instantiate_step
        from nyla.features.validator import QueryValidator

        for feature in _features(plugin):
            ontology = feature.get_agent_ontology()
            if ontology is None:
                continue
            validator = QueryValidator(feature.tables(), ontology)
            for pattern in ontology.canonical_patterns:
                assert pattern.steps, f"pattern {pattern.name} has no steps"
                for step in pattern.steps:
                    args = instantiate_step(step, feature.tables())
                    rejection = validator.check(step.tool, args)
                    assert rejection is None, (
                        f"pattern {pattern.name}: {step.tool} rejected: {rejection}"
                    )

    def test_every_constraint_is_enforced_by_the_validator(self, plugin: Any) -> None:
        from nyla.features.validator import QueryValidator
        from nyla.models.ontology import ConstraintKind

        checks = {
            ConstraintKind.NEVER_AGGREGATE: _check_never_aggregate,
            ConstraintKind.REQUIRES_FILTER_ON: _check_requires_filter,
            ConstraintKind.PREFERRED_TABLE_FOR_INTENT: _check_preferred_table,
        }
        for feature in _features(plugin):
            ontology = feature.get_agent_ontology()
            if ontology is None:
                continue
            validator = QueryValidator(feature.tables(), ontology)
            for c in ontology.constraints:
                check = checks.get(c.kind)
                if check is not None:
                    check(validator, c, ontology.constraints)

    def test_ontology_compiles_deterministically(self, plugin: Any) -> None:
        from nyla.features.ontology_compiler import compile_ontology_to_prompt

        for feature in _features(plugin):
            ontology = feature.get_agent_ontology()
            if ontology is None:
                continue
            first = compile_ontology_to_prompt(ontology)
            copy = type(ontology).model_validate_json(ontology.model_dump_json())
            assert compile_ontology_to_prompt(copy) == first, (
                f"feature {feature.code}: the ontology prompt differs between two compilations"
            )
            for name in [e.name for e in ontology.entities] + [
                p.name for p in ontology.canonical_patterns
            ]:
                assert name in first, f"feature {feature.code}: {name} missing from the prompt"

    def test_domain_hints_for_the_legacy_path(self, plugin: Any) -> None:
        for feature in _features(plugin):
            hints = feature.get_agent_domain_hints()
            assert isinstance(hints, str), f"feature {feature.code}: domain hints not a str"
            if feature.get_agent_ontology() is None:
                assert hints.strip(), "a feature without ontology needs domain hints"

    def test_benchmark_questions_are_well_formed(self, plugin: Any) -> None:
        for feature in _features(plugin):
            questions = feature.benchmark_questions()
            ids = [q.id for q in questions]
            assert len(ids) == len(set(ids)), "duplicate question ids"
            ontology = feature.get_agent_ontology()
            patterns = {p.name for p in ontology.canonical_patterns} if ontology else set()
            for q in questions:
                assert q.question.strip(), f"{q.id}: empty question"
                assert set(q.expected_tools) <= TABLE_TOOLS, f"{q.id}: unknown expected tool"
                assert q.expected_numbers, f"{q.id} has no expected numbers"
                if q.pattern and patterns:
                    assert q.pattern in patterns, f"{q.id}: unknown pattern {q.pattern}"


def _check_never_aggregate(validator: Any, c: Any, _constraints: Any) -> None:
    """SUM and AVG over a NEVER_AGGREGATE field are rejected, naming the field with a hint."""
    from nyla.features.validator import INVALID_AGGREGATE_TARGET

    for field in c.fields:
        for function in ("SUM", "AVG"):
            r = _aggregate(validator, c.table, function, field)
            assert r is not None and r.code == INVALID_AGGREGATE_TARGET, (
                f"{function}({c.table}.{field}) passed: {r}"
            )
            assert r.field == field and r.suggestion, (
                f"{function}({c.table}.{field}): the rejection names field "
                f"{r.field!r} and suggests {r.suggestion!r}"
            )


def _check_requires_filter(validator: Any, c: Any, _constraints: Any) -> None:
    """A query without a REQUIRES_FILTER_ON field is rejected naming it; with every required
    filter it passes."""
    from nyla.features.validator import REQUIRES_FILTER

    for field in c.fields:
        others = [f for f in _required_filters(validator, c.table) if f["field"] != field]
        r = validator.check("queryTable", {"table": c.table, "filters": others})
        assert r is not None and r.code == REQUIRES_FILTER, (
            f"queryTable on {c.table} without {field} passed: {r}"
        )
        assert r.field == field, (
            f"queryTable on {c.table}: the rejection names {r.field!r}, not {field}"
        )
        with_it = _required_filters(validator, c.table)
        rejection = validator.check("queryTable", {"table": c.table, "filters": with_it})
        assert rejection is None, f"queryTable on {c.table} with its required filters: {rejection}"


def _check_preferred_table(validator: Any, c: Any, constraints: Any) -> None:
    """The preferred table's numeric fields can be summed, and a blocked SUM elsewhere points
    to the preferred table."""
    from nyla.models.ontology import ConstraintKind

    assert c.intent, "a PREFERRED_TABLE_FOR_INTENT constraint names its intent"
    types = {f.name: f.type for f in validator.tables[c.table].fields}
    numeric = [f for f in c.fields if types.get(f) in ("integer", "number")]
    blocked = validator.never_aggregate(c.table)
    for field in [f for f in numeric if f not in blocked]:
        r = _aggregate(validator, c.table, "SUM", field)
        assert r is None, f"the preferred path SUM({c.table}.{field}) is blocked: {r}"
    never = [n for n in constraints if n.kind == ConstraintKind.NEVER_AGGREGATE]
    for n in [n for n in never if n.table != c.table]:
        r = _aggregate(validator, n.table, "SUM", n.fields[0])
        assert r is not None and c.table in (r.suggestion or ""), (
            f"the repair hint does not point to the preferred table {c.table}"
        )


def _aggregate(validator: Any, table: str, function: str, field: str) -> Any:
    """The validator's verdict on ``function(table.field)`` with the table's required filters."""
    call = {
        "table": table,
        "function": function,
        "field": field,
        "filters": _required_filters(validator, table),
    }
    return validator.check("aggregateTable", call)
