"""The model allow-list: which models a user, or everyone in a mandate, may use.

An entry names a user or a mandate and the model ids allowed there; no entry (or an empty
list) allows every model. A run's allowed models are those both its user's and its
mandate's entries allow. The agent runtime puts them on the run's context
(``RunContext.allowed_models``), and the model selector never picks another one: not for the
agent, not for its fallback chain, not for a sub-agent or an AI tool (they inherit the
context). Embedding models are not restricted: the knowledge store chooses those.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal

from sqlalchemy import JSON, DateTime, String, func, select
from sqlalchemy.orm import Mapped, mapped_column

from nyla.db import Base
from nyla.models.base import WireModel

if TYPE_CHECKING:
    from nyla.db import Database

Kind = Literal["user", "mandate"]


class ModelAllowRow(Base):
    """The models one user or one mandate may use (an empty list: every model)."""

    __tablename__ = "ai_model_allow_list"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    subject: Mapped[str] = mapped_column(String(128), primary_key=True)
    models: Mapped[list[str]] = mapped_column(JSON, default=list)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now()
    )


class AllowEntry(WireModel):
    """One entry of the allow-list."""

    kind: Kind
    subject: str
    models: list[str]


class ModelAccess:
    """Reads and changes the allow-list (``kernel.model_access``)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def allowed(self, user_id: str, mandate_id: str | None) -> list[str] | None:
        """The models ``user_id`` in ``mandate_id`` may use; ``None``: every model."""
        keys = [("user", user_id)] + ([("mandate", mandate_id)] if mandate_id else [])
        async with self.db.session() as s:
            rows = (
                await s.scalars(
                    select(ModelAllowRow).where(
                        ModelAllowRow.kind.in_([k for k, _ in keys]),
                        ModelAllowRow.subject.in_([v for _, v in keys]),
                    )
                )
            ).all()
        result: list[str] | None = None
        for row in rows:
            if (row.kind, row.subject) not in keys or not row.models:
                continue
            result = list(row.models) if result is None else [m for m in result if m in row.models]
        return result

    async def set(self, kind: Kind, subject: str, models: list[str]) -> AllowEntry:
        """Replace the entry of a user or mandate (an empty list removes the restriction)."""
        clean = sorted({m.strip() for m in models if m.strip()})
        async with self.db.session() as s:
            row = await s.get(ModelAllowRow, (kind, subject))
            if not clean:
                if row is not None:
                    await s.delete(row)
            elif row is None:
                s.add(ModelAllowRow(kind=kind, subject=subject, models=clean))
            else:
                row.models = clean
        return AllowEntry(kind=kind, subject=subject, models=clean)

    async def entries(self) -> list[AllowEntry]:
        """Every entry, mandates first."""
        async with self.db.session() as s:
            rows = (
                await s.scalars(
                    select(ModelAllowRow).order_by(ModelAllowRow.kind, ModelAllowRow.subject)
                )
            ).all()
        return [AllowEntry(kind=r.kind, subject=r.subject, models=list(r.models)) for r in rows]  # type: ignore[arg-type]
