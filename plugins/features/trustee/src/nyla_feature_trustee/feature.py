"""The trustee feature object contributed through ``nyla_features``.

Its tables, data provider and questions (SQLAlchemy, YAML) are imported on first use, not at
discovery: every ``nyla`` command discovers plugins, few of them touch a feature's data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nyla.sdk import BenchmarkQuestion, FeatureTable, OntologyDescriptor
from nyla_feature_trustee.ontology import DOMAIN_HINTS, build_ontology

if TYPE_CHECKING:
    from nyla_feature_trustee.provider import TrusteeDataProvider


class TrusteeFeature:
    """Swiss SME accounting: accounts with monthly balances, journal entries and lines."""

    code = "trustee"
    label = "Trustee accounting (Swiss SME)"
    #: trustee workflows (extract, check, book) are built in the graphical editor: runs in
    #: a trustee instance get the ``workflow`` toolbox from the start
    graphical_editor = True

    def __init__(self) -> None:
        self._provider: TrusteeDataProvider | None = None
        self._ontology = build_ontology()

    def tables(self) -> list[FeatureTable]:
        """The tables the data agent sees."""
        from nyla_feature_trustee.tables import FEATURE_TABLES

        return [t.model_copy(deep=True) for t in FEATURE_TABLES]

    def data_provider(self) -> TrusteeDataProvider:
        """The provider holding the SQLAlchemy tables, data versions and the seeder."""
        if self._provider is None:
            from nyla_feature_trustee.provider import TrusteeDataProvider

            self._provider = TrusteeDataProvider()
        return self._provider

    def get_agent_ontology(self) -> OntologyDescriptor:
        """The ontology (entities, relations, constraints, canonical patterns)."""
        return self._ontology.model_copy(deep=True)

    def get_agent_domain_hints(self) -> str:
        """Legacy free-text hints for features without ontology / the baseline eval mode."""
        return DOMAIN_HINTS

    def benchmark_questions(self) -> list[BenchmarkQuestion]:
        """Eval questions with expected numbers computed from the default seeded data."""
        from nyla_feature_trustee.questions import load_questions

        return [q.model_copy(deep=True) for q in load_questions()]
