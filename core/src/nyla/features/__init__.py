"""Feature data access: table tools (browseTable / queryTable / aggregateTable) built with
SQLAlchemy Core, the pre-execute :class:`QueryValidator`, the ontology compiler, the data
agent's schema prompt and the feature data sub-agent."""

from __future__ import annotations

from nyla.features.data_agent import FeatureAgentResult, run_feature_data_agent
from nyla.features.ontology_compiler import compile_ontology_to_prompt
from nyla.features.validator import QueryValidator

__all__ = [
    "FeatureAgentResult",
    "QueryValidator",
    "compile_ontology_to_prompt",
    "run_feature_data_agent",
]
