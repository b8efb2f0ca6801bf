"""Model selection: which model answers a call (a :class:`~nyla.models.model_query.ModelQuery`).

Eligible models offer the operation type, are available (configured), belong to a provider
the run context allows, are on the context's model allow-list (``allowed_models``; embedding
calls are not restricted by it), have room for the estimated prompt plus the reply, support tools
when the call carries tools, and declare every capability the request's answer options need
(``tool_choice``, ``stop_sequences``, ``json_mode``, ``structured_output``). They are ranked by quality, then speed, then price. An explicit
model id overrides the ranking (it must still be known, available and allowed); the rest of
the ranking is the fallback chain.

Selection comes in two steps: :meth:`ModelSelector.ranked` is everything but the window (a
:class:`Ranked`, the same for every call of a kind while the specs are the same objects, so
it may be kept), :meth:`Ranked.fits` the chain for one call's window (checked every call).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
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

    def __init__(self, models: Callable[[], Sequence[ModelSpec]]) -> None:
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
        first (the first ``query.limit`` of them): :meth:`ranked`, then :meth:`Ranked.fits`
        for the query's window.

        Raises :class:`ModelNotAvailableError` when nothing fits, saying why
        (:class:`UnsupportedCapabilityError` when the explicit model lacks one of
        ``query.needs``).
        """
        return self.ranked(query).fits(query.estimated_tokens)

    def ranked(self, query: ModelQuery) -> Ranked:
        """What may answer ``query`` whatever its window (``query.estimated_tokens`` is not
        read): its explicit model, checked (the errors of :meth:`candidates` but the window's),
        and the other eligible models best first."""
        specs = tuple(self._models())
        explicit = _explicit(query, specs) if query.model else None
        return Ranked(query, specs, explicit, self._ranked(query, specs))

    def _ranked(self, query: ModelQuery, specs: tuple[ModelSpec, ...]) -> list[ModelSpec]:
        """The eligible models but for the window, best first; kept per kind of request
        while the specs are the same objects (every model call asks, the answer rarely
        changes; 26 specs took ~50 us to rank)."""
        key = query.ranking_key()
        hit = self._cache.get(key)
        if hit is not None and hit[0] == specs:  # identity first: one pass in C
            return hit[1]
        ranked = sorted((s for s in specs if _why_not(s, query, 0) is None), key=rank_key)
        if len(self._cache) >= 64:
            self._cache.clear()
        self._cache[key] = (specs, ranked)
        return ranked

    def forget(self) -> None:
        """Drop the kept rankings (a spec was changed in place)."""
        self._cache.clear()

    def select(self, query: ModelQuery) -> ModelSpec:
        """The best model for the query (see :meth:`candidates`)."""
        return self.candidates(query)[0]


@dataclass(slots=True)
class Ranked:
    """The models a kind of call may go to, whatever its window (:meth:`ModelSelector.ranked`):
    the query's ``explicit`` model (or ``None``) and the other eligible models best first, made
    from ``specs``. It depends on nothing a call changes but its window, so a caller may keep
    it while the specs are the same objects (a spec is a value: a provider changes a model's
    availability or price by handing a new spec); :meth:`fits` is the per-call step."""

    query: ModelQuery
    specs: tuple[ModelSpec, ...]
    explicit: ModelSpec | None
    ranked: list[ModelSpec]

    def fits_or_none(self, estimated_tokens: int) -> list[ModelSpec] | None:
        """:meth:`fits`, ``None`` instead of the error when nothing fits."""
        chain = self._fitting(estimated_tokens)
        return chain or None

    def fits(self, estimated_tokens: int) -> list[ModelSpec]:
        """The chain of a call whose window is ``estimated_tokens``: the explicit model (its
        window is the caller's choice), then the ranked models that hold the window, at most
        ``query.limit`` in all. :class:`ModelNotAvailableError` saying why when none fits."""
        chain = self._fitting(estimated_tokens)
        if not chain:
            query = replace(self.query, estimated_tokens=estimated_tokens)
            raise _nothing_fits(query, *_reasons(self.specs, query))
        return chain

    def _fitting(self, estimated_tokens: int) -> list[ModelSpec]:
        explicit = self.explicit
        chain = [] if explicit is None else [explicit]
        first = None if explicit is None else explicit.id
        limit = self.query.limit
        most = len(self.specs) + 1 if limit is None else limit
        for spec in self.ranked:
            if len(chain) >= most:
                break
            if spec.context_window >= estimated_tokens and spec.id != first:
                chain.append(spec)
        return chain


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


def _reasons(
    specs: Sequence[ModelSpec], query: ModelQuery
) -> tuple[dict[str, int], dict[str, None]]:
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
    spec: ModelSpec, capability: str, specs: Sequence[ModelSpec]
) -> UnsupportedCapabilityError:
    able = sorted(s.id for s in specs if getattr(s.capabilities, capability, False))
    return UnsupportedCapabilityError(
        f"model {spec.id!r} does not declare {capability}, which the request needs "
        f"(models that do: {', '.join(able) or 'none'})",
        capability=capability,
        model=spec.id,
    )


def _explicit(query: ModelQuery, specs: Sequence[ModelSpec]) -> ModelSpec:
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
