"""The ontology compiler (deterministic, snapshot) and the data agent's schema prompt."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from nyla.features.ontology_compiler import compile_ontology_to_prompt
from nyla.features.prompt import build_schema_prompt, temporal_context
from nyla.hookspecs import hookimpl
from nyla.kernel import Kernel
from nyla.models.ontology import (
    CanonicalPattern,
    Cardinality,
    Constraint,
    ConstraintKind,
    Entity,
    OntologyDescriptor,
    PatternStep,
    Relation,
)
from nyla.plugins import PluginHost

from .conftest import trustee

SNAPSHOT = Path(__file__).parent / "snapshots" / "trustee_ontology_prompt.txt"
NOW = datetime(2026, 3, 15, 9, 30, tzinfo=UTC)


def test_trustee_ontology_matches_the_snapshot():
    text = compile_ontology_to_prompt(trustee.TrusteeFeature().get_agent_ontology())
    assert text == SNAPSHOT.read_text("utf-8"), (
        "the compiled ontology changed; if intended, regenerate the snapshot"
    )


def _descriptor(args: dict) -> OntologyDescriptor:
    return OntologyDescriptor(
        feature_code="shop",
        entities=[
            Entity(name="Order", table="orders", key_fields=["id"]),
            Entity(name="BigOrder", table="orders", parent_entity="Order", description="large"),
            Entity(name="Line", table="lines"),
        ],
        relations=[
            Relation(
                from_entity="Line",
                to_entity="Order",
                cardinality=Cardinality.MANY_TO_ONE,
                via_field="order_id",
            )
        ],
        constraints=[
            Constraint(
                kind=ConstraintKind.NEVER_AGGREGATE,
                table="orders",
                fields=["total"],
                reason="pre-summed",
            )
        ],
        canonical_patterns=[
            CanonicalPattern(
                name="REVENUE",
                intent="revenue",
                steps=[PatternStep(tool="aggregateTable", arguments=args)],
            )
        ],
    )


def test_same_descriptor_gives_byte_identical_text_regardless_of_key_order():
    a = _descriptor({"table": "lines", "function": "SUM", "field": "amount"})
    b = _descriptor({"field": "amount", "function": "SUM", "table": "lines"})
    assert compile_ontology_to_prompt(a) == compile_ontology_to_prompt(b)
    assert compile_ontology_to_prompt(a) == compile_ontology_to_prompt(a.model_copy(deep=True))


def test_compiled_text_renders_every_part():
    text = compile_ontology_to_prompt(
        _descriptor({"table": "lines", "function": "SUM", "field": "amount"})
    )
    assert "  - BigOrder (specializes Order)" in text
    assert "Line -> Order (MANY_TO_ONE via order_id = Order.id)" in text
    assert "NEVER_AGGREGATE orders: total" in text and "pre-summed" in text
    assert '1. aggregateTable {"field": "amount", "function": "SUM", "table": "lines"}' in text


def _kernel() -> Kernel:
    return Kernel(plugins=PluginHost.from_plugins([trustee], names=["trustee"]))


def test_schema_prompt_phase2_has_tables_rules_time_and_ontology():
    prompt = _kernel().features.schema_prompt("trustee", now=NOW, timezone="Europe/Zurich")
    assert "Now is Sunday, 2026-03-15 10:30 (Europe/Zurich)" in prompt
    assert "- closing_balance (number): Balance at the end of the period" in prompt
    assert "Never SUM or AVG" in prompt
    assert compile_ontology_to_prompt(trustee.TrusteeFeature().get_agent_ontology()) in prompt
    assert "## Domain hints" not in prompt


def test_schema_prompt_legacy_path(monkeypatch):
    features = _kernel().features
    legacy = features.schema_prompt("trustee", use_ontology=False, now=NOW)
    assert "## Domain hints" in legacy and "Domain ontology" not in legacy
    assert trustee.ontology.DOMAIN_HINTS.strip() in legacy
    monkeypatch.setenv("NYLA_DISABLE_FEATURE_ONTOLOGY", "1")
    assert features.schema_prompt("trustee", now=NOW) == legacy


def test_feature_without_or_with_broken_ontology_falls_back_to_hints():
    class NoOntology(trustee.TrusteeFeature):
        code = "plain"

        def get_agent_ontology(self):
            raise RuntimeError("broken plugin")

    class Plugin:
        @hookimpl
        def nyla_features(self):
            return [NoOntology()]

    kernel = Kernel(plugins=PluginHost.from_plugins([Plugin()], names=["plain"]))
    prompt = kernel.features.schema_prompt("plain", now=NOW)
    assert "## Domain hints" in prompt and "Domain ontology" not in prompt


def test_invalid_timezone_falls_back_to_utc():
    assert "(UTC)" in temporal_context(NOW, "Mars/Olympus")


def test_build_schema_prompt_without_any_domain_block():
    feature = trustee.TrusteeFeature()
    prompt = build_schema_prompt(feature, ontology=None, domain_hints="", now=NOW)
    assert "## Rules" in prompt and "Domain" not in prompt
