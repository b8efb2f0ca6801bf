"""Service-access rules (``service_access``): which user, mandate or role may, or may not,
use a service (the agent, the knowledge store, a connector). See :mod:`nyla.access`."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, String, func
from sqlalchemy.orm import Mapped, mapped_column

from nyla.db import Base


class ServiceAccessRow(Base):
    """One rule: ``kind`` (``user``, ``mandate`` or ``role``) and ``subject`` name who,
    ``permission`` what (``service.agent``, ``service.connector.msft`` ...), ``allowed``
    whether it is granted or revoked."""

    __tablename__ = "service_access"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    subject: Mapped[str] = mapped_column(String(128), primary_key=True)
    permission: Mapped[str] = mapped_column(String(160), primary_key=True)
    allowed: Mapped[bool] = mapped_column(Boolean)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now()
    )
