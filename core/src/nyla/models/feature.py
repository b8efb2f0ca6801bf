"""Contracts of a business feature: its tables, data provider, ontology and eval questions."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import Field

from nyla.models.base import WireModel
from nyla.models.ontology import OntologyDescriptor


class FeatureField(WireModel):
    """A column of a feature table as the data agent sees it. ``type`` is one of
    ``string``, ``integer``, ``number``, ``boolean``, ``date``, ``datetime``."""

    name: str
    type: str
    description: str = ""
    nullable: bool = True


class FeatureTable(WireModel):
    """A feature data table (always keyed by feature instance)."""

    name: str
    description: str = ""
    fields: list[FeatureField] = Field(default_factory=list)
    primary_key: list[str] = Field(default_factory=lambda: ["id"])


class BenchmarkQuestion(WireModel):
    """One eval question with its expected tool pattern, forbidden patterns and numbers."""

    id: str
    question: str
    pattern: str | None = None
    expected_tools: list[str] = Field(default_factory=list)
    expected_filters: list[str] = Field(default_factory=list)
    forbidden: list[dict[str, Any]] = Field(default_factory=list)
    expected_numbers: list[float] = Field(default_factory=list)
    tolerance: float = 0.01
    tags: list[str] = Field(default_factory=list)


@runtime_checkable
class FeatureDataProvider(Protocol):
    """Where a feature's rows live. The kernel's table tools query through SQLAlchemy Core
    tables that the provider exposes; ``data_version`` changes whenever an instance's data
    changes (cache invalidation)."""

    def sqlalchemy_tables(self) -> dict[str, Any]: ...

    async def data_version(self, feature_instance_id: str) -> str: ...


@runtime_checkable
class Feature(Protocol):
    """A business feature, contributed through ``nyla_features``.

    Optional, read with :func:`declares_graphical_editor`: a class attribute
    ``graphical_editor = True`` declares that the feature's instances are worked on in the
    graphical workflow editor; a run in such an instance then gets every toolbox marked
    ``graphical_editor`` (the ``workflow`` toolbox) switched on from its start.

    A feature that declares an ontology (``get_agent_ontology``) gets a data agent behind the
    kernel's ``queryFeatureInstance``. Optional too: a class attribute
    ``requires_neutralization = True`` says the feature's data holds personal data; its data
    agent's model calls are then neutralised whatever the run that asked does.
    """

    code: str
    label: str

    def tables(self) -> list[FeatureTable]: ...

    def data_provider(self) -> FeatureDataProvider: ...

    def get_agent_ontology(self) -> OntologyDescriptor | None: ...

    def get_agent_domain_hints(self) -> str: ...

    def benchmark_questions(self) -> list[BenchmarkQuestion]: ...


def declares_graphical_editor(feature: object) -> bool:
    """Whether ``feature`` declares the graphical workflow editor (``graphical_editor =
    True``; anything but ``True`` is no)."""
    return getattr(feature, "graphical_editor", False) is True
