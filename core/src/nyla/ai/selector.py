"""Model selection: which model answers a call (a :class:`~nyla.models.model_query.ModelQuery`).

Eligible models offer the operation type, are available (configured), belong to a provider
the run context allows, are on the context's model allow-list (``allowed_models``; embedding
calls are not restricted by it), have room for the estimated prompt plus the reply, support tools
when the call carries tools, and declare every capability the request's answer options need
(``tool_choice``, ``stop_sequences``, ``json_mode``, ``structured_output``). They are ranked by quality, then speed, then price. An explicit
model id overrides the ranking (it must still be known, available and allowed); the rest of
the ranking is the fallback chain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nyla.errors import ModelNotAvailableError, UnsupportedCapabilityError
from nyla.models.ai import ModelSpec
from nyla.models.model_query import ModelQuery


def _price_key(spec: ModelSpec) -> float:
    if spec.price_input_chf_per_mtok is None or spec.price_output_chf_per_mtok is None:
        return float("inf")
    return spec.price_input_chf_per_mtok + spec.price_output_chf_per_mtok


def lacking(spec: ModelSpec, needs: tuple[str, ...]) -> str | None:
    """The first capability of ``needs`` that ``spec`` does not declare, or ``None``."""
    return next((c for c in needs if not getattr(spec.capabilities, c, False)), None)


def rank_key(spec: ModelSpec) -> tuple[float, float, float, str]:
    """Sort key: best quality first, then fastest, then cheapest, then id (deterministic)."""
    return (-spec.quality_rank, -spec.speed_rank, _price_key(spec), spec.id)


class ModelSelector:
    """Selects models from the registry the plugin host builds (``models()`` returns every
    :class:`ModelSpec` of every provider)."""

    def __init__(self, models: Callable[[], list[ModelSpec]]) -> None:
        self._models = models
        self._cache: dict[tuple[Any, ...], tuple[tuple[ModelSpec, ...], list[ModelSpec]]] = {}

    def all(self) -> list[ModelSpec]:
        """Every model spec of every provider."""
        return list(self._models())

    def spec(self, model_id: str) -> ModelSpec | None:
        """The spec of ``model_id`` (``provider:model``), or ``None``."""
        for spec in self._models():
            if spec.id == model_id:
                return spec
        return None

    def candidates(self, query: ModelQuery) -> list[ModelSpec]:
        """The query's explicit model (if any) followed by every other eligible model, best
        first (the first ``query.limit`` of them).

        Raises :class:`ModelNotAvailableError` when nothing fits, saying why
        (:class:`UnsupportedCapabilityError` when the explicit model lacks one of
        ``query.needs``).
        """
        specs = self._models()  # a list of its own (not changed here)
        chain: list[ModelSpec] = []
        if query.model:
            chain.append(_explicit(query, specs))
        first = chain[0].id if chain else None
        most = len(specs) + 1 if query.limit is None else query.limit
        for spec in self._ranked(query, specs):
            if len(chain) >= most:
                break
            if spec.context_window >= query.estimated_tokens and spec.id != first:
                chain.append(spec)
        if not chain:
            raise _nothing_fits(query, *_reasons(specs, query))
        return chain

    def _ranked(self, query: ModelQuery, specs: list[ModelSpec]) -> list[ModelSpec]:
        """The eligible models but for the window, best first; kept per kind of request
        while the specs are the same objects (every model call asks, the answer rarely
        changes; 26 specs took ~50 us to rank)."""
        key = query.ranking_key()
        hit = self._cache.get(key)
        current = tuple(specs)
        if hit is not None and hit[0] == current:  # identity first: one pass in C
            return hit[1]
        ranked = sorted((s for s in specs if _why_not(s, query, 0) is None), key=rank_key)
        if len(self._cache) >= 64:
            self._cache.clear()
        self._cache[key] = (current, ranked)
        return ranked

    def select(self, query: ModelQuery) -> ModelSpec:
        """The best model for the query (see :meth:`candidates`)."""
        return self.candidates(query)[0]


def _why_not(spec: ModelSpec, query: ModelQuery, estimated_tokens: int) -> str | None:
    """Why ``spec`` cannot answer the query with a window of ``estimated_tokens`` (the first
    reason), or ``None``."""
    needs = query.needs
    gap = lacking(spec, needs) if needs else None
    providers, models = query.allowed_providers, query.allowed_models
    checks = (
        ("operation", query.operation in spec.operation_types),
        ("unavailable", spec.available),
        ("provider not allowed", providers is None or spec.provider in providers),
        ("not on the allow-list", models is None or spec.id in models),
        ("context window too small", spec.context_window >= estimated_tokens),
        ("no tool support", not query.needs_tools or spec.capabilities.tools),
        (f"no {gap}", gap is None),
    )
    return next((reason for reason, ok in checks if not ok), None)


def _reasons(specs: list[ModelSpec], query: ModelQuery) -> tuple[dict[str, int], dict[str, None]]:
    """How many models each reason ruled out, and what would enable the unavailable ones."""
    reasons: dict[str, int] = {}
    missing: dict[str, None] = {}
    for spec in specs:
        reason = _why_not(spec, query, query.estimated_tokens)
        if reason is None:
            continue
        reasons[reason] = reasons.get(reason, 0) + 1
        if reason == "unavailable" and spec.unavailable_reason:
            missing[spec.unavailable_reason] = None
    return reasons, missing


def _unsupported(
    spec: ModelSpec, capability: str, specs: list[ModelSpec]
) -> UnsupportedCapabilityError:
    able = sorted(s.id for s in specs if getattr(s.capabilities, capability, False))
    return UnsupportedCapabilityError(
        f"model {spec.id!r} does not declare {capability}, which the request needs "
        f"(models that do: {', '.join(able) or 'none'})",
        capability=capability,
        model=spec.id,
    )


def _explicit(query: ModelQuery, specs: list[ModelSpec]) -> ModelSpec:
    """The spec of the query's explicitly named model, when it may answer the query."""
    model, providers, models = query.model, query.allowed_providers, query.allowed_models
    spec = next((s for s in specs if s.id == model), None)
    if spec is None:
        known = ", ".join(sorted(s.id for s in specs)) or "none"
        raise ModelNotAvailableError(f"unknown model {model!r} (known: {known})")
    if not spec.available:
        raise ModelNotAvailableError(f"model {model!r} is not available: {spec.unavailable_reason}")
    if providers is not None and spec.provider not in providers:
        raise ModelNotAvailableError(
            f"model {model!r} is not allowed in this context "
            f"(allowed providers: {', '.join(providers) or 'none'})"
        )
    if models is not None and model not in models:
        raise ModelNotAvailableError(
            f"model {model!r} is not on this user's model allow-list "
            f"(allowed: {', '.join(models) or 'none'})"
        )
    capability = lacking(spec, query.needs)
    if capability is not None:
        raise _unsupported(spec, capability, specs)
    return spec


def _nothing_fits(
    query: ModelQuery, reasons: dict[str, int], missing: dict[str, None]
) -> ModelNotAvailableError:
    detail = ", ".join(f"{n} {r}" for r, n in reasons.items() if r != "operation")
    hint = "".join(f"\n  - {m}" for m in missing)
    message = (
        f"no model for operation {query.operation.value!r}"
        + (f" ({detail})" if detail else " (no provider offers it)")
        + (f"; to enable one:{hint}" if hint else "")
    )
    capability = next((c for c in query.needs if f"no {c}" in reasons), None)
    if capability is not None:
        return UnsupportedCapabilityError(message, capability=capability)
    return ModelNotAvailableError(message)
