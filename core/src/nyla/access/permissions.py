"""Service permissions and how a set of rules decides one (pure: no storage here).

A permission names a service: ``service.agent`` (run the agent), ``service.knowledge`` (the
knowledge store: its search, its context in a run, indexing), ``service.connector`` (every
connector) or ``service.connector.<name>`` (one, e.g. ``service.connector.msft``). A rule grants
or revokes one permission for a user, a mandate or a role; a rule on ``service.connector``
covers each ``service.connector.<name>``.

Deciding: the most specific rule that covers the permission wins — a user's rule before its
mandate's, a mandate's before its role's, and at the same level a rule on the exact permission
before one on its parent. Without any rule the role's default decides
(:data:`DEFAULT_GRANTS`: every role may use every service, so a fresh installation works as
before); an identity without a role (the local CLI) is allowed by default too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from nyla.errors import PermissionDeniedError

AGENT = "service.agent"
KNOWLEDGE = "service.knowledge"
CONNECTOR = "service.connector"
#: the services a permission can name (a connector also by ``service.connector.<name>``)
SERVICES = (AGENT, KNOWLEDGE, CONNECTOR)

Kind = Literal["user", "mandate", "role"]
KINDS: tuple[Kind, ...] = ("user", "mandate", "role")
#: the roles of the seeds (``user`` < ``mandateAdmin`` < ``sysadmin``)
ROLES = ("user", "mandateAdmin", "sysadmin")
#: what each role may use when no rule says otherwise
DEFAULT_GRANTS: dict[str, tuple[str, ...]] = {role: SERVICES for role in ROLES}
_LEVEL: dict[str, int] = {"role": 1, "mandate": 2, "user": 3}
_CONNECTOR_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

#: what each permission lets a person do, for refusals and ``nyla access list``
LABELS = {
    AGENT: "run the agent",
    KNOWLEDGE: "use the knowledge store",
    CONNECTOR: "use connectors",
}


def connector(service: str) -> str:
    """The permission of one connector (``service.connector.msft``)."""
    return f"{CONNECTOR}.{service}"


def parse_permission(text: str) -> str:
    """``text`` as a permission; a ``ValueError`` naming the valid ones otherwise. ``agent``,
    ``knowledge`` and ``connector.msft`` are accepted without the ``service.`` prefix."""
    value = text.strip().lower()
    if value and not value.startswith("service."):
        value = f"service.{value}"
    if value in SERVICES:
        return value
    prefix = f"{CONNECTOR}."
    if value.startswith(prefix) and _CONNECTOR_NAME.match(value[len(prefix) :]):
        return value
    raise ValueError(
        f"unknown permission {text!r}: service.agent, service.knowledge, service.connector "
        "or service.connector.<name>"
    )


def parse_role(text: str) -> str:
    """``text`` as one of :data:`ROLES` (``mandate-admin`` and ``admin`` accepted)."""
    key = text.strip().replace("-", "").replace("_", "").lower()
    aliases = {"user": "user", "mandateadmin": "mandateAdmin", "admin": "mandateAdmin"}
    aliases["sysadmin"] = "sysadmin"
    if key not in aliases:
        raise ValueError(f"unknown role {text!r}: user, mandate-admin or sysadmin")
    return aliases[key]


def covers(rule_permission: str, permission: str) -> bool:
    """Whether a rule on ``rule_permission`` applies to ``permission``."""
    return permission == rule_permission or permission.startswith(rule_permission + ".")


def label(permission: str) -> str:
    """What ``permission`` lets a person do, in words."""
    if permission.startswith(CONNECTOR + "."):
        return f"use the {permission[len(CONNECTOR) + 1 :]} connector"
    return LABELS.get(permission, permission)


@dataclass(frozen=True, slots=True)
class Subject:
    """Who asks: a user, the mandate they act in and their role (``None``: no role, as the
    local CLI)."""

    user_id: str
    mandate_id: str | None = None
    role: str | None = None

    def keys(self) -> list[tuple[Kind, str]]:
        """The ``(kind, subject)`` pairs whose rules apply to this subject."""
        keys: list[tuple[Kind, str]] = [("user", self.user_id)]
        if self.mandate_id:
            keys.append(("mandate", self.mandate_id))
        if self.role:
            keys.append(("role", self.role))
        return keys


@dataclass(frozen=True, slots=True)
class Rule:
    """One stored rule."""

    kind: Kind
    subject: str
    permission: str
    allowed: bool

    def to_wire(self) -> dict[str, object]:
        """camelCase JSON."""
        return {
            "kind": self.kind,
            "subject": self.subject,
            "permission": self.permission,
            "allowed": self.allowed,
        }


class ServiceAccessDenied(PermissionDeniedError):
    """A subject may not use a service; ``permission`` names it (the host answers 403 with
    it, the CLI exits 3 with it, a tool call fails with ``PERMISSION_DENIED``)."""

    def __init__(self, permission: str, subject: Subject) -> None:
        self.permission = permission
        self.subject = subject
        super().__init__(
            f"user {subject.user_id!r} may not {label(permission)}: the permission "
            f"{permission} is not granted (an administrator grants it with `nyla access grant "
            f"{permission} --user {subject.user_id}`)"
        )


@dataclass(frozen=True, slots=True)
class Grants:
    """The rules that apply to one subject, read once: decisions are made in memory."""

    subject: Subject
    rules: tuple[Rule, ...] = field(default_factory=tuple)

    def allows(self, permission: str) -> bool:
        """Whether the subject may use ``permission`` (see the module's deciding rule)."""
        best: tuple[int, int, bool] | None = None
        for rule in self.rules:
            if not covers(rule.permission, permission):
                continue
            key = (_LEVEL[rule.kind], len(rule.permission), rule.allowed)
            if best is None or key[:2] > best[:2]:
                best = key
        if best is not None:
            return best[2]
        role = self.subject.role
        if role is None or role not in DEFAULT_GRANTS:
            return True
        return any(covers(p, permission) for p in DEFAULT_GRANTS[role])

    def check(self, permission: str) -> None:
        """Raise :class:`ServiceAccessDenied` unless the subject may use ``permission``."""
        if not self.allows(permission):
            raise ServiceAccessDenied(permission, self.subject)

    def denied(self, permissions: Iterable[str]) -> list[str]:
        """The permissions among ``permissions`` the subject may not use."""
        return [p for p in permissions if not self.allows(p)]


#: the names :mod:`nyla.host` gives these to host apps
AccessSubject = Subject
connector_permission = connector
