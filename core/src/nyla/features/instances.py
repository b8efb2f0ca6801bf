"""Which feature an instance belongs to, for ``queryFeatureInstance`` on any feature.

A run that names its feature (``RunContext.feature_code``) gets that feature; otherwise the
installed features that declare an ontology are asked: the only one, or the only one whose
tables hold rows of the instance. A feature without an ontology has no data agent here (its
prompt and validator would have nothing to say about its data).
"""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import select

from nyla.errors import ConfigurationError, NotFoundError
from nyla.features.sql import INSTANCE_COLUMN, TableBinding


class FeatureService(Protocol):
    """The feature service as the lookup reads it (the kernel's ``FeatureService``)."""

    db: Any

    def codes(self) -> list[str]: ...

    def feature(self, code: str) -> Any: ...

    async def provider(self, code: str) -> Any: ...

    def bindings(self, code: str) -> dict[str, TableBinding]: ...


def declares_ontology(features: FeatureService, code: str) -> bool:
    """Whether the feature ``code`` declares an ontology (a broken one counts as none)."""
    getter = getattr(features.feature(code), "get_agent_ontology", None)
    if getter is None:
        return False
    try:
        return getter() is not None
    except Exception:
        return False


def requires_neutralization(features: FeatureService, code: str) -> bool:
    """Whether the feature's data must be neutralised before any model sees it
    (``Feature.requires_neutralization``, off when the feature does not say)."""
    return bool(getattr(features.feature(code), "requires_neutralization", False))


async def holds_instance(features: FeatureService, code: str, instance_id: str) -> bool:
    """Whether any table of the feature ``code`` has a row of ``instance_id``."""
    await features.provider(code)
    async with features.db.read_session() as s:
        for binding in features.bindings(code).values():
            column: Any = binding.table.c[INSTANCE_COLUMN]
            found = await s.scalar(select(column).where(column == instance_id).limit(1))
            if found is not None:
                return True
    return False


async def feature_of_instance(
    features: FeatureService, instance_id: str, feature_code: str | None
) -> str:
    """The code of the feature whose instance ``instance_id`` is (see the module)."""
    if feature_code is not None:
        features.feature(feature_code)  # unknown: ConfigurationError naming the known ones
        if not declares_ontology(features, feature_code):
            raise ConfigurationError(
                f"feature {feature_code!r} declares no ontology: it has no data agent"
            )
        return feature_code
    candidates = [c for c in features.codes() if declares_ontology(features, c)]
    if not candidates:
        raise ConfigurationError("no installed feature declares an ontology")
    if len(candidates) == 1:
        return candidates[0]
    holding = [c for c in candidates if await holds_instance(features, c, instance_id)]
    if len(holding) == 1:
        return holding[0]
    if not holding:
        raise NotFoundError(f"no feature holds data of instance {instance_id!r}")
    raise ConfigurationError(
        f"instance {instance_id!r} has data in several features ({', '.join(holding)}): "
        "run in the instance's feature (feature code) to choose one"
    )
