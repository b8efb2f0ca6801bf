"""A caller's model access rule: the providers and models their mandate's and their own
entries allow, applied by the AI service to every call it selects a model for.

Provider lists restrict every operation. A model list restricts each operation it names a
model of (a list of chat models leaves embeddings alone; one that names an embedding model
restricts embeddings to the models it names). With entries for both the mandate and the user,
a model must pass both.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from nyla.models.ai import ModelSpec, OperationType
from nyla.models.model_query import ModelQuery


def _meet(a: tuple[str, ...] | None, b: tuple[str, ...] | None) -> tuple[str, ...] | None:
    if a is None:
        return b
    if b is None:
        return a
    return tuple(x for x in a if x in b)


@dataclass(frozen=True)
class AccessRule:
    """The provider lists and model lists that bind one user in one mandate; ``source``
    names the entries (``mandate 'm1' (providers: a)``) for the error a refusal raises."""

    provider_lists: tuple[tuple[str, ...], ...] = ()
    model_lists: tuple[tuple[str, ...], ...] = ()
    source: str = ""
    _per_operation: dict[Any, tuple[str, ...] | None] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def providers(self) -> tuple[str, ...] | None:
        """The providers every list allows (``None``: no provider list)."""
        allowed: tuple[str, ...] | None = None
        for names in self.provider_lists:
            allowed = _meet(allowed, names)
        return allowed

    def models_for(
        self, operation: OperationType, specs: list[ModelSpec]
    ) -> tuple[str, ...] | None:
        """The models allowed for ``operation`` (``None``: no list names one of its models)."""
        if operation in self._per_operation:
            return self._per_operation[operation]
        offers = {s.id for s in specs if operation in s.operation_types}
        allowed: tuple[str, ...] | None = None
        for names in self.model_lists:
            named = tuple(m for m in names if m in offers)
            if named:
                allowed = _meet(allowed, named)
        self._per_operation[operation] = allowed
        return allowed

    def narrow(self, query: ModelQuery, specs: list[ModelSpec]) -> ModelQuery:
        """``query`` inside this rule (the same object when the rule changes nothing)."""
        providers = self.providers
        models = self.models_for(query.operation, specs)
        if providers is None and models is None:
            return query
        return replace(
            query,
            allowed_providers=_meet(query.allowed_providers, providers),
            allowed_models=_meet(query.allowed_models, models),
        )

    def why_not(
        self, spec: ModelSpec, operation: OperationType, specs: list[ModelSpec]
    ) -> str | None:
        """Why the rule forbids ``spec`` for ``operation`` (``None``: it does not)."""
        providers = self.providers
        if providers is not None and spec.provider not in providers:
            return f"provider {spec.provider!r} is not among the allowed ({', '.join(providers) or 'none'})"
        models = self.models_for(operation, specs)
        if models is not None and spec.id not in models:
            return f"model {spec.id!r} is not among the allowed ({', '.join(models) or 'none'})"
        return None


def describe(kind: str, subject: str, providers: list[str], models: list[str]) -> str:
    """One entry as a refusal names it."""
    parts = [f"providers: {', '.join(providers)}"] if providers else []
    parts += [f"models: {', '.join(models)}"] if models else []
    return f"{kind} {subject!r} ({'; '.join(parts)})"
