"""The ontology a feature exports for its data agent (seeds: ``OntologyDescriptor``).

One descriptor is the single source of truth for both the query validator (constraints) and
the prompt compiler (entities, relations, constraints, canonical patterns as worked examples).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from nyla.models.base import WireModel


class Cardinality(StrEnum):
    """Cardinality of a relation, read from the ``from`` side."""

    ONE_TO_ONE = "ONE_TO_ONE"
    ONE_TO_MANY = "ONE_TO_MANY"
    MANY_TO_ONE = "MANY_TO_ONE"
    MANY_TO_MANY = "MANY_TO_MANY"


class ConstraintKind(StrEnum):
    """Machine-readable rules the validator enforces and the compiler renders."""

    NEVER_AGGREGATE = "NEVER_AGGREGATE"
    REQUIRES_FILTER_ON = "REQUIRES_FILTER_ON"
    PREFERRED_TABLE_FOR_INTENT = "PREFERRED_TABLE_FOR_INTENT"


class EntityFilter(WireModel):
    """A filter that binds an entity to a subset of its table (e.g. ``account_number LIKE '102%'``)."""

    field: str
    operator: str
    value: Any


class Entity(WireModel):
    """A semantic concept bound to a table; ``parent_entity`` makes a sub-group explicit."""

    name: str
    table: str
    description: str = ""
    parent_entity: str | None = None
    filters: list[EntityFilter] = Field(default_factory=list)
    key_fields: list[str] = Field(default_factory=list)


class Relation(WireModel):
    """A foreign-key relation between entities, with cardinality and the joining fields."""

    from_entity: str
    to_entity: str
    cardinality: Cardinality
    via_field: str
    to_field: str = "id"
    description: str = ""


class Constraint(WireModel):
    """A rule on a table's fields. ``fields`` are the fields concerned; ``intent`` names the
    intent for ``PREFERRED_TABLE_FOR_INTENT``."""

    kind: ConstraintKind
    table: str
    fields: list[str] = Field(default_factory=list)
    intent: str | None = None
    reason: str = ""


class PatternStep(WireModel):
    """One tool call of a canonical pattern, as a skeleton with placeholders like ``<date>``."""

    tool: str
    arguments: dict[str, Any]
    note: str = ""


class CanonicalPattern(WireModel):
    """A tool-call skeleton for a frequent intent (e.g. ``BANK_BALANCE_AT_DATE``)."""

    name: str
    intent: str
    description: str = ""
    steps: list[PatternStep] = Field(default_factory=list)


class OntologyDescriptor(WireModel):
    """Everything a feature states about the meaning of its tables."""

    feature_code: str
    version: str = "1"
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    constraints: list[Constraint] = Field(default_factory=list)
    canonical_patterns: list[CanonicalPattern] = Field(default_factory=list)
