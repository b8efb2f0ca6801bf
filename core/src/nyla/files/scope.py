"""Who may read what: the scope rule of files and folders as a SQL condition.

A row is readable by a run context when:

- ``personal``: it belongs to the context's user, and its mandate / feature instance (when the
  row has one) are the context's;
- ``featureInstance``: the context works in that feature instance;
- ``mandate``: the context works in that mandate;
- ``global``: always.

Writes need the same visibility (there is no tool-level RBAC; the store is the check).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, or_

from nyla.models.agent import RunContext
from nyla.models.files import Scope


def readable(table: Any, context: RunContext) -> Any:
    """SQL condition: rows of ``table`` (files or folders) that ``context`` may read."""
    personal = and_(
        table.scope == Scope.PERSONAL.value,
        table.user_id == context.user_id,
        or_(table.mandate_id.is_(None), table.mandate_id == context.mandate_id),
        or_(
            table.feature_instance_id.is_(None),
            table.feature_instance_id == context.feature_instance_id,
        ),
    )
    conditions = [personal, table.scope == Scope.GLOBAL.value]
    if context.feature_instance_id:
        conditions.append(
            and_(
                table.scope == Scope.FEATURE_INSTANCE.value,
                table.feature_instance_id == context.feature_instance_id,
            )
        )
    if context.mandate_id:
        conditions.append(
            and_(table.scope == Scope.MANDATE.value, table.mandate_id == context.mandate_id)
        )
    return or_(*conditions)


def owner_ids(context: RunContext, scope: Scope) -> dict[str, Any]:
    """The owner columns of a new row created by ``context`` in ``scope``."""
    if scope is Scope.FEATURE_INSTANCE and not context.feature_instance_id:
        raise ValueError("scope featureInstance needs a run context with a feature instance")
    if scope is Scope.MANDATE and not context.mandate_id:
        raise ValueError("scope mandate needs a run context with a mandate")
    return {
        "scope": scope.value,
        "user_id": context.user_id,
        "mandate_id": context.mandate_id,
        "feature_instance_id": context.feature_instance_id,
    }
