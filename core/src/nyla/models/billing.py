"""Contracts of billing: one charge the AI service reports, a spending policy, and the
report a mandate admin reads (``nyla billing report``, ``GET /api/billing/report``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from nyla.models.base import WireModel


@dataclass(slots=True)
class Charge:
    """One operation the AI service ran and its cost in CHF (a ledger row to be)."""

    operation: str
    model: str
    cost_chf: float
    input_tokens: int = 0
    output_tokens: int = 0
    detail: dict[str, Any] = field(default_factory=dict)
    #: the estimate the preflight admitted the operation with
    estimated_chf: float = 0.0


PolicyKind = Literal["user", "mandate"]


class SpendingPolicy(WireModel):
    """What a mandate (or a user) may spend: ``monthly_limit_chf`` (``None``: no limit),
    ``spending_allowed`` (``False``: every call refused), ``prepaid`` (a mandate spends only
    the credit added to it)."""

    kind: PolicyKind
    subject: str
    monthly_limit_chf: float | None = None
    spending_allowed: bool = True
    prepaid: bool = False


class ReportLine(WireModel):
    """One line of a billing report: a user in a mandate, one kind and operation."""

    user_id: str | None
    mandate_id: str | None
    kind: str
    operation: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_chf: float


class StorageLine(WireModel):
    """What the knowledge store holds for a user in a mandate at the month's last snapshot,
    and its price for the month."""

    user_id: str | None
    mandate_id: str | None
    bytes: int
    chunks: int
    cost_chf: float
    taken_at: str


class BillingReport(WireModel):
    """A month's spending (calls and storage) of a mandate and/or user, with the limits and
    the credit that apply."""

    month: str
    mandate_id: str | None = None
    user_id: str | None = None
    lines: list[ReportLine]
    storage: list[StorageLine]
    calls_chf: float
    storage_chf: float
    total_chf: float
    held_chf: float = 0.0
    policies: list[SpendingPolicy] = []
    credit_chf: float | None = None
