"""Indicative cost of a full sync of a data source (seeds: ``_costEstimate``).

Sized by what the source holds when that is known — the files its syncs indexed, with the
tokens they were embedded as, when the last sync read the whole source, or else a listing of
it now (:mod:`nyla.walkers.survey`) — and otherwise by its limits (an upper bound:
``max_bytes`` for files, ``max_tasks`` for ClickUp). The limits
also cap what is known. Priced by the embedding model the knowledge store will use: a free
(local) model costs nothing. tokens = bytes x extractable fraction / bytes per token where no
token count is known; CHF = tokens x the model's price. Vendor list prices are taken as CHF
(the project's convention).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nyla.knowledge.limits import LimitKind, get_rag_limits
from nyla.models.knowledge import CostBasis, CostEstimate

DEFAULT_PRICE_MODEL = "openai:text-embedding-3-small"
DEFAULT_PRICE_CHF_PER_MTOK = 0.02
BYTES_PER_TOKEN = 4
EXTRACTABLE_FRACTION = 0.4
#: a ClickUp task (name, description, comments) as bytes of text
BYTES_PER_CLICKUP_TASK = 2048


@dataclass
class Held:
    """What a data source is known to hold: its indexed items, their bytes and the tokens
    they were embedded as (0: not counted), and whether the last sync read all of it."""

    items: int
    bytes: int
    tokens: int
    complete: bool


def estimate_cost(
    data_source: Any,
    kind: LimitKind,
    *,
    source_id: str,
    price_chf_per_mtok: float | None = None,
    price_model: str | None = None,
    held: Held | None = None,
    listed: Held | None = None,
) -> CostEstimate:
    """The estimate for ``data_source`` with its current limits (``get_rag_limits``): sized
    by ``held`` (what its syncs indexed) when that is the whole source, else by ``listed``
    (a listing of it now) when that ended, else by the limits; priced at
    ``price_chf_per_mtok`` of ``price_model`` (none given: the default model's price)."""
    limits = get_rag_limits(data_source, kind)
    price = DEFAULT_PRICE_CHF_PER_MTOK if price_chf_per_mtok is None else price_chf_per_mtok
    model = price_model if price_chf_per_mtok is not None and price_model else DEFAULT_PRICE_MODEL
    notes = ["indicative, not binding"]
    cap = limits["max_bytes"] if kind == "files" else limits["max_tasks"] * BYTES_PER_CLICKUP_TASK
    if held is not None and held.complete and held.items:
        sized_by = "indexed"
        source_bytes = min(held.bytes, cap)
        counted = held.tokens > 0 and held.bytes <= cap
        tokens = held.tokens if counted else _tokens(source_bytes)
        notes.append(
            f"sized by what the source holds: {held.items} item(s), {_size(held.bytes)} indexed "
            f"by its last sync{', capped by its limits' if held.bytes > cap else ''}"
        )
    elif listed is not None and listed.complete:
        sized_by = "listed"
        source_bytes = min(listed.bytes, cap)
        tokens = _tokens(source_bytes)
        notes.append(
            f"sized by a listing of the source now: {listed.items} item(s), "
            f"{_size(listed.bytes)} within its limits"
        )
        held = listed
    else:
        sized_by = "limits"
        source_bytes = cap
        tokens = _tokens(source_bytes)
        if held is not None and held.items:
            why = f"its last sync stopped at a limit after {held.items} item(s)"
        elif listed is not None:
            why = f"listing it was cut short after {listed.items} item(s)"
        else:
            why = "it has not been read yet"
        bound = (
            f"maxBytes {_size(cap)}"
            if kind == "files"
            else f"maxTasks {limits['max_tasks']} x {BYTES_PER_CLICKUP_TASK} bytes a task"
        )
        notes.append(f"sized by the limits ({bound}), an upper bound: {why}")
    if price == 0:
        notes.append(f"the embedding model {model} is free: indexing costs nothing")
    elif price_chf_per_mtok is None:
        notes.append(f"no embedding model can be chosen now: priced as {model}")
    else:
        notes.append(f"priced as the embedding model {model} ({price:g} CHF per million tokens)")
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
                "sourceItems": held.items if held is not None and sized_by != "limits" else None,
                "sizedBy": sized_by,
            },
            notes=notes,
        ),
        source_id=source_id,
    )


def _tokens(source_bytes: int) -> int:
    return int(source_bytes * EXTRACTABLE_FRACTION / BYTES_PER_TOKEN)


def _size(n: int) -> str:
    """Bytes for people, in units of 1024: ``1.4 KB``, ``500 MB``."""
    if n < 1024:
        return f"{n} bytes"
    value = n / 1024
    for unit in ("KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            break
        value /= 1024
    return f"{value:.1f} {unit}".replace(".0 ", " ")
