"""Prices and budget: cost of a call in CHF, the preflight estimate, and totals per run.

Prices are CHF per million tokens on each :class:`ModelSpec` (vendor list prices taken as
CHF). The preflight refuses a call whose estimate exceeds the caller's remaining budget, and
fails closed: with a budget set, a model without a price is refused too.
"""

from __future__ import annotations

from dataclasses import dataclass

from nyla.errors import BudgetExceeded
from nyla.models.ai import ModelSpec, Usage
from nyla.models.prices import usage_price_chf

#: assumed reply length for the estimate when the request sets no ``max_output_tokens``
DEFAULT_OUTPUT_ESTIMATE = 1000


def call_cost_chf(spec: ModelSpec, usage: Usage) -> float | None:
    """Cost of one call: tokens at the model's prices plus its per-call fee, or ``None``
    when the price is unknown."""
    u = usage  # (ModelSpec.cost_chf's sum, without its frame: it runs on every model call)
    cost = usage_price_chf(spec, u.input_tokens, u.output_tokens, u.characters, u.audio_seconds)
    if cost is None:
        return None
    return cost + (spec.price_per_call_chf or 0.0)


def estimate_cost_chf(
    spec: ModelSpec, input_tokens: int, max_output_tokens: int | None = None
) -> float | None:
    """Estimated cost before the call (``None`` when the price is unknown): :func:`call_cost_chf`
    of ``input_tokens`` and the reply's length, summed without making a ``Usage`` (it runs on
    every model call)."""
    output = max_output_tokens
    if output is None:
        output = min(spec.max_output_tokens, DEFAULT_OUTPUT_ESTIMATE)
    cost = usage_price_chf(spec, input_tokens, output)
    if cost is None:
        return None
    return cost + (spec.price_per_call_chf or 0.0)


def preflight(
    spec: ModelSpec,
    input_tokens: int,
    max_output_tokens: int | None,
    remaining_chf: float | None,
) -> float | None:
    """Check the estimate against the remaining budget; return the estimate.

    Raises :class:`BudgetExceeded` when the estimate exceeds ``remaining_chf`` or, with a
    budget set, when the model's price is unknown.
    """
    estimate = estimate_cost_chf(spec, input_tokens, max_output_tokens)
    return within_budget(spec, estimate, remaining_chf)


def within_budget(
    spec: ModelSpec, estimate: float | None, remaining_chf: float | None
) -> float | None:
    """:func:`preflight` for an ``estimate`` already made (see :meth:`nyla.ai.route.Route.estimate`)."""
    if remaining_chf is None:
        return estimate
    if estimate is None:
        raise BudgetExceeded(
            f"model {spec.id!r} has no known price; refusing the call under a budget "
            f"of {remaining_chf:.4f} CHF",
            remaining_chf=remaining_chf,
        )
    if estimate > remaining_chf:
        raise BudgetExceeded(
            f"call to {spec.id!r} is estimated at {estimate:.6f} CHF, more than the remaining "
            f"budget of {remaining_chf:.6f} CHF",
            estimated_chf=estimate,
            remaining_chf=remaining_chf,
        )
    return estimate


@dataclass
class UsageTotals:
    """Accumulated usage and cost of one run (or of everything, under the key ``None``)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_chf: float = 0.0

    def add(self, usage: Usage, cost_chf: float) -> None:
        """Count one call."""
        self.calls += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cost_chf += cost_chf
