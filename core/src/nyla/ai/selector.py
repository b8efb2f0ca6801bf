"""Model selection: which model answers a call.

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
from nyla.models.ai import ModelSpec, OperationType


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

    def candidates(
        self,
        operation: OperationType | str,
        *,
        context: Any = None,
        estimated_tokens: int = 0,
        needs_tools: bool = False,
        model: str | None = None,
        needs: tuple[str, ...] = (),
        limit: int | None = None,
    ) -> list[ModelSpec]:
        """The explicit model (if any) followed by every other eligible model, best first
        (the first ``limit`` of them). ``needs`` are capability flags every model must
        declare.

        Raises :class:`ModelNotAvailableError` when nothing fits, saying why
        (:class:`UnsupportedCapabilityError` when the explicit model lacks one of ``needs``).
        """
        if type(operation) is not OperationType:
            operation = OperationType(operation)
        allowed = _Allowed(
            getattr(context, "allowed_providers", None),
            None
            if operation is OperationType.EMBEDDING
            else getattr(context, "allowed_models", None),
        )
        specs = self._models()  # a list of its own (not changed here)
        chain: list[ModelSpec] = []
        if model:
            chain.append(_explicit(model, specs, allowed, needs))
        first = chain[0].id if chain else None
        most = len(specs) + 1 if limit is None else limit
        for spec in self._ranked(operation, specs, allowed, needs_tools, needs):
            if len(chain) >= most:
                break
            if spec.context_window >= estimated_tokens and spec.id != first:
                chain.append(spec)
        if not chain:
            why = _reasons(specs, operation, allowed, needs_tools, needs, estimated_tokens)
            raise _nothing_fits(operation, *why, needs)
        return chain

    def _ranked(
        self,
        operation: OperationType,
        specs: list[ModelSpec],
        allowed: _Allowed,
        needs_tools: bool,
        needs: tuple[str, ...],
    ) -> list[ModelSpec]:
        """The eligible models but for the window, best first; kept per kind of request
        while the specs are the same objects (every model call asks, the answer rarely
        changes; 26 specs took ~50 us to rank)."""
        key = (operation, allowed.key(), needs_tools, needs)
        hit = self._cache.get(key)
        current = tuple(specs)
        if hit is not None and hit[0] == current:  # identity first: one pass in C
            return hit[1]
        ranked = sorted(
            (s for s in specs if _why_not(s, operation, allowed, needs_tools, needs) is None),
            key=rank_key,
        )
        if len(self._cache) >= 64:
            self._cache.clear()
        self._cache[key] = (current, ranked)
        return ranked

    def select(self, operation: OperationType | str, **kw: Any) -> ModelSpec:
        """The best model for the call (see :meth:`candidates`)."""
        return self.candidates(operation, **kw)[0]


class _Allowed:
    """The context's restriction: providers and model ids (``None``: not restricted)."""

    __slots__ = ("models", "providers")

    def __init__(self, providers: list[str] | None, models: list[str] | None) -> None:
        self.providers, self.models = providers, models

    def key(self) -> tuple[Any, ...]:
        return (
            None if self.providers is None else tuple(self.providers),
            None if self.models is None else tuple(self.models),
        )


def _why_not(
    spec: ModelSpec,
    operation: OperationType,
    allowed: _Allowed,
    needs_tools: bool,
    needs: tuple[str, ...],
    estimated_tokens: int = 0,
) -> str | None:
    """Why ``spec`` cannot answer the request (the first reason), or ``None``."""
    gap = lacking(spec, needs) if needs else None
    checks = (
        ("operation", operation in spec.operation_types),
        ("unavailable", spec.available),
        ("provider not allowed", allowed.providers is None or spec.provider in allowed.providers),
        ("not on the allow-list", allowed.models is None or spec.id in allowed.models),
        ("context window too small", spec.context_window >= estimated_tokens),
        ("no tool support", not needs_tools or spec.capabilities.tools),
        (f"no {gap}", gap is None),
    )
    return next((reason for reason, ok in checks if not ok), None)


def _reasons(
    specs: list[ModelSpec],
    operation: OperationType,
    allowed: _Allowed,
    needs_tools: bool,
    needs: tuple[str, ...],
    estimated_tokens: int,
) -> tuple[dict[str, int], dict[str, None]]:
    """How many models each reason ruled out, and what would enable the unavailable ones."""
    reasons: dict[str, int] = {}
    missing: dict[str, None] = {}
    for spec in specs:
        reason = _why_not(spec, operation, allowed, needs_tools, needs, estimated_tokens)
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


def _explicit(
    model: str, specs: list[ModelSpec], allowed: _Allowed, needs: tuple[str, ...]
) -> ModelSpec:
    """The spec of the explicitly named ``model``, when it may answer the request."""
    spec = next((s for s in specs if s.id == model), None)
    if spec is None:
        known = ", ".join(sorted(s.id for s in specs)) or "none"
        raise ModelNotAvailableError(f"unknown model {model!r} (known: {known})")
    if not spec.available:
        raise ModelNotAvailableError(f"model {model!r} is not available: {spec.unavailable_reason}")
    if allowed.providers is not None and spec.provider not in allowed.providers:
        raise ModelNotAvailableError(
            f"model {model!r} is not allowed in this context "
            f"(allowed providers: {', '.join(allowed.providers) or 'none'})"
        )
    if allowed.models is not None and model not in allowed.models:
        raise ModelNotAvailableError(
            f"model {model!r} is not on this user's model allow-list "
            f"(allowed: {', '.join(allowed.models) or 'none'})"
        )
    capability = lacking(spec, needs)
    if capability is not None:
        raise _unsupported(spec, capability, specs)
    return spec


def _nothing_fits(
    operation: OperationType,
    reasons: dict[str, int],
    missing: dict[str, None],
    needs: tuple[str, ...],
) -> ModelNotAvailableError:
    detail = ", ".join(f"{n} {r}" for r, n in reasons.items() if r != "operation")
    hint = "".join(f"\n  - {m}" for m in missing)
    message = (
        f"no model for operation {operation.value!r}"
        + (f" ({detail})" if detail else " (no provider offers it)")
        + (f"; to enable one:{hint}" if hint else "")
    )
    capability = next((c for c in needs if f"no {c}" in reasons), None)
    if capability is not None:
        return UnsupportedCapabilityError(message, capability=capability)
    return ModelNotAvailableError(message)
