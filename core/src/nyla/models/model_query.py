"""What a call asks of a model: :class:`ModelQuery`, the one argument of the model selector
(:class:`nyla.ai.selector.ModelSelector`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nyla.models.agent import RunContext
from nyla.models.ai import OperationType


@dataclass(frozen=True, slots=True)
class ModelQuery:
    """Which models may answer a call, and which first.

    ``operation`` is what the call does; ``allowed_providers`` / ``allowed_models`` restrict
    the models (``None``: no restriction); ``estimated_tokens`` is the window the call needs
    (prompt plus reply); ``needs_tools`` asks for tool support and ``needs`` for capability
    flags (``tool_choice``, ``json_mode``, ...); ``model`` names a model to put first (it must
    still fit); ``limit`` caps the chain (``None``: every eligible model).
    """

    operation: OperationType
    allowed_providers: tuple[str, ...] | None = None
    allowed_models: tuple[str, ...] | None = None
    estimated_tokens: int = 0
    needs_tools: bool = False
    model: str | None = None
    needs: tuple[str, ...] = ()
    limit: int | None = None

    @classmethod
    def for_call(
        cls, operation: OperationType | str, context: RunContext | None = None, **kw: Any
    ) -> ModelQuery:
        """The query of a call in ``context``: its provider restriction and model allow-list
        (which does not restrict embedding calls); ``kw`` sets the other fields."""
        if type(operation) is not OperationType:
            operation = OperationType(operation)
        providers = models = None
        if context is not None:
            providers = context.allowed_providers
            if operation is not OperationType.EMBEDDING:
                models = context.allowed_models
        return cls(
            operation,
            None if providers is None else tuple(providers),
            None if models is None else tuple(models),
            **kw,
        )

    def ranking_key(self) -> tuple[Any, ...]:
        """What the ranking of the eligible models depends on (all but the window, the
        named model and the limit)."""
        return (
            self.operation,
            self.allowed_providers,
            self.allowed_models,
            self.needs_tools,
            self.needs,
        )
