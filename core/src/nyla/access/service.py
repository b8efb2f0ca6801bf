"""``kernel.service_access``: the one place that decides whether someone may use a service.

The CLI, the host and the agent's tools all ask this service (the CLI and the host before
they start anything, a run once when it is prepared — the decisions travel on the run's
context as ``RunContext.denied_services`` and the tool registry refuses a tool that needs
one of them). Rules are stored in ``service_access`` (:mod:`nyla.tables.access`); how they
decide is :mod:`nyla.access.permissions`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, or_, select

from nyla.access.permissions import (
    AGENT,
    CONNECTOR,
    KNOWLEDGE,
    Grants,
    Kind,
    Rule,
    Subject,
    connector,
)
from nyla.tables.access import ServiceAccessRow

if TYPE_CHECKING:
    from nyla.db import Database
    from nyla.models.agent import RunContext


def subject_of(context: RunContext) -> Subject:
    """The subject a run acts as (its user, mandate and role)."""
    return Subject(context.user_id, context.mandate_id, getattr(context, "role", None))


def service_permissions(connector_services: Iterable[str]) -> list[str]:
    """Every permission a run may need: the agent, the knowledge store, connectors as a
    whole and each installed connector."""
    return [AGENT, KNOWLEDGE, CONNECTOR, *(connector(s) for s in sorted(connector_services))]


def _row_rule(row: ServiceAccessRow) -> Rule:
    kind: Kind = row.kind  # type: ignore[assignment]
    return Rule(kind, row.subject, row.permission, bool(row.allowed))


class ServiceAccess:
    """Reads and changes the service-access rules and decides with them."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def grants(self, subject: Subject) -> Grants:
        """The rules of ``subject`` (one read), to decide in memory."""
        keys = subject.keys()
        match = or_(
            *(and_(ServiceAccessRow.kind == k, ServiceAccessRow.subject == v) for k, v in keys)
        )
        async with self.db.read_session() as s:
            rows = (await s.scalars(select(ServiceAccessRow).where(match))).all()
        return Grants(subject, tuple(_row_rule(r) for r in rows))

    async def allows(self, subject: Subject, permission: str) -> bool:
        """Whether ``subject`` may use ``permission``."""
        return (await self.grants(subject)).allows(permission)

    async def check(self, subject: Subject, permission: str) -> None:
        """Raise :class:`~nyla.access.permissions.ServiceAccessDenied` unless ``subject``
        may use ``permission``."""
        (await self.grants(subject)).check(permission)

    async def check_all(
        self, user_id: str, mandate_id: str | None, permissions: Iterable[str]
    ) -> None:
        """:meth:`check` of each permission (one read) for a user acting in a mandate without
        a role — work done on a user's behalf in the background, such as a scheduled sync
        (only user and mandate rules apply to it, as to the local CLI)."""
        grants = await self.grants(Subject(user_id, mandate_id))
        for permission in permissions:
            grants.check(permission)

    async def check_run(self, context: RunContext, permission: str) -> None:
        """:meth:`check` for the subject of a run's context."""
        await self.check(subject_of(context), permission)

    async def denied_for_run(
        self, context: RunContext, connector_services: Iterable[str]
    ) -> list[str]:
        """What the run's subject may not use, among :func:`service_permissions`."""
        grants = await self.grants(subject_of(context))
        return grants.denied(service_permissions(connector_services))

    async def set(self, kind: Kind, subject: str, permission: str, allowed: bool) -> Rule:
        """Grant (``allowed=True``) or revoke ``permission`` for a user, mandate or role."""
        if not subject.strip():
            raise ValueError(f"a {kind} rule needs a {kind} name")
        async with self.db.session() as s:
            row = await s.get(ServiceAccessRow, (kind, subject, permission))
            if row is None:
                s.add(
                    ServiceAccessRow(
                        kind=kind, subject=subject, permission=permission, allowed=allowed
                    )
                )
            else:
                row.allowed = allowed
        return Rule(kind, subject, permission, allowed)

    async def clear(self, kind: Kind, subject: str, permission: str) -> bool:
        """Remove a rule (the defaults decide again); False when there was none."""
        async with self.db.session() as s:
            row = await s.get(ServiceAccessRow, (kind, subject, permission))
            if row is None:
                return False
            await s.delete(row)
        return True

    async def rules(self, kind: Kind | None = None, subject: str | None = None) -> list[Rule]:
        """The stored rules (of one kind / subject when given), roles first."""
        statement: Any = select(ServiceAccessRow)
        if kind is not None:
            statement = statement.where(ServiceAccessRow.kind == kind)
        if subject is not None:
            statement = statement.where(ServiceAccessRow.subject == subject)
        statement = statement.order_by(
            ServiceAccessRow.kind, ServiceAccessRow.subject, ServiceAccessRow.permission
        )
        async with self.db.read_session() as s:
            rows = (await s.scalars(statement)).all()
        return [_row_rule(r) for r in rows]
