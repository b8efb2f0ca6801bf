"""Who calls: the identity every authenticated request carries, and the roles the seeds use
(user, mandate admin, sysadmin; each includes the ones before it)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Role(StrEnum):
    """A caller's role. ``MANDATE_ADMIN`` administers its mandate (mandate inventory, the
    settings of mandate-scoped data sources); ``SYSADMIN`` the platform."""

    USER = "user"
    MANDATE_ADMIN = "mandateAdmin"
    SYSADMIN = "sysadmin"

    @property
    def rank(self) -> int:
        """Order of privilege: a role includes every role of a lower rank."""
        return _RANK[self]

    @classmethod
    def parse(cls, value: str) -> Role:
        """``user`` / ``mandate-admin`` / ``mandateAdmin`` / ``admin`` / ``sysadmin``."""
        key = value.strip().replace("-", "").replace("_", "").lower()
        aliases = {"user": cls.USER, "mandateadmin": cls.MANDATE_ADMIN, "admin": cls.MANDATE_ADMIN}
        aliases["sysadmin"] = cls.SYSADMIN
        aliases["platformadmin"] = cls.SYSADMIN
        if key not in aliases:
            raise ValueError(f"unknown role {value!r}: user, mandate-admin or sysadmin")
        return aliases[key]


_RANK = {Role.USER: 0, Role.MANDATE_ADMIN: 1, Role.SYSADMIN: 2}


class Identity(BaseModel):
    """An authenticated caller. ``via`` says which authenticator accepted it (``token``,
    ``oidc`` or the name of a host app's hook). Frozen: a verified token's identity is
    shared by the requests that carry it (see :mod:`nyla_host.tokens`)."""

    model_config = ConfigDict(frozen=True)

    user_id: str
    mandate_id: str | None = None
    role: Role = Role.USER
    via: str = "token"
    name: str = ""
    claims: dict[str, object] = Field(default_factory=dict)

    def has(self, role: Role) -> bool:
        """True when this identity's role includes ``role``."""
        return self.role.rank >= role.rank

    @property
    def is_mandate_admin(self) -> bool:
        """Administers its mandate (a sysadmin administers every mandate)."""
        return self.has(Role.MANDATE_ADMIN)

    @property
    def is_sysadmin(self) -> bool:
        """Administers the platform."""
        return self.role is Role.SYSADMIN
