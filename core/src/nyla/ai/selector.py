"""Model selection: which model answers a call.

Eligible models offer the operation type, are available (configured), belong to a provider
the run context allows, have room for the estimated prompt plus the reply, and support tools
when the call carries tools. They are ranked by quality, then speed, then price. An explicit
model id overrides the ranking (it must still be known, available and allowed); the rest of
the ranking is the fallback chain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nyla.errors import ModelNotAvailableError
from nyla.models.ai import ModelSpec, OperationType


def _price_key(spec: ModelSpec) -> float:
    if spec.price_input_chf_per_mtok is None or spec.price_output_chf_per_mtok is None:
        return float("inf")
    return spec.price_input_chf_per_mtok + spec.price_output_chf_per_mtok


def rank_key(spec: ModelSpec) -> tuple[float, float, float, str]:
    """Sort key: best quality first, then fastest, then cheapest, then id (deterministic)."""
    return (-spec.quality_rank, -spec.speed_rank, _price_key(spec), spec.id)


class ModelSelector:
    """Selects models from the registry the plugin host builds (``models()`` returns every
    :class:`ModelSpec` of every provider)."""

    def __init__(self, models: Callable[[], list[ModelSpec]]) -> None:
        self._models = models

    def all(self) -> list[ModelSpec]:
        """Every model spec of every provider."""
        return list(self._models())

    def spec(self, model_id: str) -> ModelSpec | None:
        """The spec of ``model_id`` (``provider:model``), or ``None``."""
        for spec in self._models():
            if spec.id == model_id:
                return spec
        return None

    def candidates(
        self,
        operation: OperationType | str,
        *,
        context: Any = None,
        estimated_tokens: int = 0,
        needs_tools: bool = False,
        model: str | None = None,
    ) -> list[ModelSpec]:
        """The explicit model (if any) followed by every other eligible model, best first.

        Raises :class:`ModelNotAvailableError` when nothing fits, saying why.
        """
        operation = OperationType(operation)
        allowed = getattr(context, "allowed_providers", None)
        specs = self.all()
        chain: list[ModelSpec] = []
        if model:
            spec = next((s for s in specs if s.id == model), None)
            if spec is None:
                known = ", ".join(sorted(s.id for s in specs)) or "none"
                raise ModelNotAvailableError(f"unknown model {model!r} (known: {known})")
            if not spec.available:
                raise ModelNotAvailableError(
                    f"model {model!r} is not available: {spec.unavailable_reason}"
                )
            if allowed is not None and spec.provider not in allowed:
                raise ModelNotAvailableError(
                    f"model {model!r} is not allowed in this context "
                    f"(allowed providers: {', '.join(allowed) or 'none'})"
                )
            chain.append(spec)

        reasons: dict[str, int] = {}
        missing: dict[str, None] = {}

        def eligible(spec: ModelSpec) -> bool:
            checks = (
                ("operation", operation in spec.operation_types),
                ("unavailable", spec.available),
                ("provider not allowed", allowed is None or spec.provider in allowed),
                ("context window too small", spec.context_window >= estimated_tokens),
                ("no tool support", not needs_tools or spec.capabilities.tools),
            )
            for reason, ok in checks:
                if not ok:
                    reasons[reason] = reasons.get(reason, 0) + 1
                    if reason == "unavailable" and spec.unavailable_reason:
                        missing[spec.unavailable_reason] = None
                    return False
            return True

        rest = sorted((s for s in specs if eligible(s)), key=rank_key)
        chain.extend(s for s in rest if not chain or s.id != chain[0].id)
        if not chain:
            detail = ", ".join(f"{n} {r}" for r, n in reasons.items() if r != "operation")
            hint = "".join(f"\n  - {m}" for m in missing)
            raise ModelNotAvailableError(
                f"no model for operation {operation.value!r}"
                + (f" ({detail})" if detail else " (no provider offers it)")
                + (f"; to enable one:{hint}" if hint else "")
            )
        return chain

    def select(self, operation: OperationType | str, **kw: Any) -> ModelSpec:
        """The best model for the call (see :meth:`candidates`)."""
        return self.candidates(operation, **kw)[0]
