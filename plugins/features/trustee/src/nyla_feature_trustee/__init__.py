"""The trustee (Swiss SME accounting) feature: tables, seeded data, ontology, benchmark questions."""

from __future__ import annotations

from nyla.sdk import Feature, hookimpl
from nyla_feature_trustee.feature import TrusteeFeature

__all__ = ["TrusteeFeature", "nyla_features"]


@hookimpl
def nyla_features() -> list[Feature]:
    """The trustee feature."""
    return [TrusteeFeature()]
