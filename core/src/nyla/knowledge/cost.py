"""Indicative cost of a full sync of a data source (seeds: ``_costEstimate``).

tokens = bytes within the limits x extractable fraction / bytes per token; CHF = tokens x the
embedding model's price. Vendor list prices are taken as CHF (the project's convention).
"""

from __future__ import annotations

from typing import Any

from nyla.knowledge.limits import LimitKind, get_rag_limits
from nyla.models.knowledge import CostBasis, CostEstimate

DEFAULT_PRICE_MODEL = "openai:text-embedding-3-small"
DEFAULT_PRICE_CHF_PER_MTOK = 0.02
BYTES_PER_TOKEN = 4
EXTRACTABLE_FRACTION = 0.4
#: a ClickUp task (name, description, comments) as bytes of text
BYTES_PER_CLICKUP_TASK = 2048


def estimate_cost(
    data_source: Any,
    kind: LimitKind,
    *,
    source_id: str,
    price_chf_per_mtok: float | None = None,
    price_model: str | None = None,
) -> CostEstimate:
    """The estimate for ``data_source`` with its current limits (``get_rag_limits``)."""
    limits = get_rag_limits(data_source, kind)
    price = DEFAULT_PRICE_CHF_PER_MTOK if price_chf_per_mtok is None else price_chf_per_mtok
    model = price_model if price_chf_per_mtok is not None and price_model else DEFAULT_PRICE_MODEL
    notes = ["indicative, not binding; changes with the limits"]
    if kind == "files":
        source_bytes = limits["max_bytes"]
        notes.append("files: max_bytes bounds what one sync reads")
    else:
        source_bytes = limits["max_tasks"] * BYTES_PER_CLICKUP_TASK
        notes.append(f"clickup: max_tasks x {BYTES_PER_CLICKUP_TASK} bytes per task")
    tokens = int(source_bytes * EXTRACTABLE_FRACTION / BYTES_PER_TOKEN)
    return CostEstimate(
        estimated_tokens=tokens,
        estimated_chf=round(tokens * price / 1_000_000, 6),
        basis=CostBasis(
            kind=kind,
            limits=limits,
            assumptions={
                "model": model,
                "priceChfPerMTok": price,
                "bytesPerToken": BYTES_PER_TOKEN,
                "extractableFraction": EXTRACTABLE_FRACTION,
                "sourceBytes": source_bytes,
            },
            notes=notes,
        ),
        source_id=source_id,
    )
