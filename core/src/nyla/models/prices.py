"""The price sum of a model's usage, in one place: :meth:`ModelSpec.cost_chf` adds up a
:class:`~nyla.models.ai.Usage`, the budget's estimate (:mod:`nyla.ai.pricing`) the usage it
plans, without making one (a validated ``Usage`` on every model call cost ~10k instructions).
"""

from __future__ import annotations

from typing import Any


def usage_price_chf(
    spec: Any, input_tokens: int, output_tokens: int, characters: int = 0, audio_s: float = 0.0
) -> float | None:
    """CHF of that much input, output, characters and audio at ``spec``'s prices (a
    :class:`~nyla.models.ai.ModelSpec`; its per-call fee not included), or ``None`` when its
    token prices are unknown (a budget then fails closed)."""
    price_in, price_out = spec.price_input_chf_per_mtok, spec.price_output_chf_per_mtok
    if price_in is None or price_out is None:
        return None
    total: float = (
        input_tokens * price_in
        + output_tokens * price_out
        + characters * (spec.price_per_million_chars_chf or 0.0)
    ) / 1_000_000 + audio_s / 60 * (spec.price_per_audio_minute_chf or 0.0)
    return total
