"""Feature data access: table tools (browseTable / queryTable / aggregateTable) built with
SQLAlchemy Core, the pre-execute :class:`QueryValidator`, the ontology compiler, the data
agent's schema prompt and the feature data sub-agent.

The names load on first use, so that ``nyla feature --help`` imports no data agent."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nyla.features.data_agent import FeatureAgentResult, run_feature_data_agent
    from nyla.features.ontology_compiler import compile_ontology_to_prompt
    from nyla.features.validator import QueryValidator

_EXPORTS = {
    "FeatureAgentResult": "nyla.features.data_agent",
    "run_feature_data_agent": "nyla.features.data_agent",
    "compile_ontology_to_prompt": "nyla.features.ontology_compiler",
    "QueryValidator": "nyla.features.validator",
}

__all__ = [
    "FeatureAgentResult",
    "QueryValidator",
    "compile_ontology_to_prompt",
    "run_feature_data_agent",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nyla.features' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
