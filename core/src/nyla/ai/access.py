"""Model access: which providers and models a user, or everyone in a mandate, may use.

An entry names a user or a mandate and the model ids (``ai_model_allow_list``) or provider
ids (``ai_provider_allow_list``) allowed there; no entry (or an empty list) allows every
model. A call's allowed models are those both its user's and its mandate's entries allow.

The AI service applies the entries of the caller's context (its ``user_id`` and
``mandate_id``) to every call it selects a model for — agent rounds, summaries, sub-agents,
AI tools, embeddings, web search, images, speech, and calls made directly on ``kernel.ai`` —
through :meth:`ModelAccess.rule` (see :mod:`nyla.ai.access_rule` for how a list binds each
operation). A forbidden model is a :class:`~nyla.errors.ModelAccessDenied` naming the entry.
The agent runtime also puts the model list on the run's context
(``RunContext.allowed_models``) so hosts can show what a user may choose. The entries are
read once and kept ``cache_s`` seconds (10), so a change made by another process applies
within that time; one made through this object at once.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import JSON, DateTime, String, func, select
from sqlalchemy.orm import Mapped, mapped_column

from nyla.ai.access_rule import AccessRule, describe
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


class ProviderAllowRow(Base):
    """The providers one user or one mandate may use (an empty list: every provider)."""

    __tablename__ = "ai_provider_allow_list"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    subject: Mapped[str] = mapped_column(String(128), primary_key=True)
    providers: Mapped[list[str]] = mapped_column(JSON, default=list)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now()
    )


class AllowEntry(WireModel):
    """One entry of the allow-list (``providers`` empty: every provider)."""

    kind: Kind
    subject: str
    models: list[str]
    providers: list[str] = []


class ModelAccess:
    """Reads and changes the allow-list (``kernel.model_access``)."""

    def __init__(self, db: Database, *, cache_s: float = 10.0) -> None:
        self.db = db
        self.cache_s = cache_s
        self._entries: dict[tuple[str, str], AllowEntry] = {}
        self._loaded_at = -1e18
        self._rules: dict[tuple[str, str | None], AccessRule | None] = {}

    async def rule(self, user_id: str | None, mandate_id: str | None) -> AccessRule | None:
        """The rule binding ``user_id`` in ``mandate_id`` (``None``: every model), from the
        entries read at most ``cache_s`` seconds ago."""
        if time.monotonic() - self._loaded_at >= self.cache_s:
            entries = await self.entries()
            self._entries = {(e.kind, e.subject): e for e in entries}
            self._rules = {}
            self._loaded_at = time.monotonic()
        key = (user_id or "", mandate_id)
        if key not in self._rules:
            self._rules[key] = self._rule_of(user_id, mandate_id)
        return self._rules[key]

    def _rule_of(self, user_id: str | None, mandate_id: str | None) -> AccessRule | None:
        found = [
            e
            for e in (
                self._entries.get(("mandate", mandate_id)) if mandate_id else None,
                self._entries.get(("user", user_id)) if user_id else None,
            )
            if e is not None and (e.models or e.providers)
        ]
        if not found:
            return None
        return AccessRule(
            provider_lists=tuple(tuple(e.providers) for e in found if e.providers),
            model_lists=tuple(tuple(e.models) for e in found if e.models),
            source=" and ".join(describe(e.kind, e.subject, e.providers, e.models) for e in found),
        )

    def forget(self) -> None:
        """Read the entries again on the next call."""
        self._loaded_at = -1e18

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

    async def effective(
        self, user_id: str, mandate_id: str | None, specs: list[Any]
    ) -> list[str] | None:
        """The ids among ``specs`` that ``user_id`` in ``mandate_id`` may choose: on both
        model lists (:meth:`allowed`) and of a provider both provider lists allow; ``None``:
        every model."""
        allowed = await self.allowed(user_id, mandate_id)
        rule = await self.rule(user_id, mandate_id)
        providers = None if rule is None else rule.providers
        if providers is None:
            return allowed
        return [
            s.id for s in specs if s.provider in providers and (allowed is None or s.id in allowed)
        ]

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
        self.forget()
        return AllowEntry(kind=kind, subject=subject, models=clean)

    async def set_providers(self, kind: Kind, subject: str, providers: list[str]) -> AllowEntry:
        """Replace the provider list of a user or mandate (empty: every provider)."""
        clean = sorted({p.strip() for p in providers if p.strip()})
        async with self.db.session() as s:
            row = await s.get(ProviderAllowRow, (kind, subject))
            if not clean:
                if row is not None:
                    await s.delete(row)
            elif row is None:
                s.add(ProviderAllowRow(kind=kind, subject=subject, providers=clean))
            else:
                row.providers = clean
        self.forget()
        return AllowEntry(kind=kind, subject=subject, models=[], providers=clean)

    async def entries(self) -> list[AllowEntry]:
        """Every entry (model and provider lists of one subject together), mandates first."""
        async with self.db.session() as s:
            models = (await s.scalars(select(ModelAllowRow))).all()
            providers = (await s.scalars(select(ProviderAllowRow))).all()
        merged: dict[tuple[str, str], AllowEntry] = {}
        for r in models:
            merged[(r.kind, r.subject)] = AllowEntry(
                kind=r.kind,  # type: ignore[arg-type]
                subject=r.subject,
                models=list(r.models),
            )
        for p in providers:
            entry = merged.setdefault(
                (p.kind, p.subject),
                AllowEntry(kind=p.kind, subject=p.subject, models=[]),  # type: ignore[arg-type]
            )
            entry.providers = list(p.providers)
        return [merged[k] for k in sorted(merged, key=lambda k: (k[0] != "mandate", k))]
