"""Contract suite for feature plugins."""

from __future__ import annotations

from typing import Any

from nyla.checks import check_ontology
from nyla.testing.contract_base import PluginContract, _host_for


class FeatureContract(PluginContract):
    """Contract for feature plugins: tables, and an ontology that references only real
    tables and fields."""

    def test_feature_has_tables(self, plugin: Any) -> None:
        host = _host_for(plugin)
        assert host.features, "no feature registered"
        for feature in host.features.values():
            tables = feature.tables()
            assert tables, f"feature {feature.code} has no tables"
            for t in tables:
                assert t.fields, f"table {t.name} has no fields"

    def test_ontology_references_are_real(self, plugin: Any) -> None:
        host = _host_for(plugin)
        for feature in host.features.values():
            assert check_ontology(feature) == []
