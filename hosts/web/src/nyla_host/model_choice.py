"""Which models a caller may choose: the kernel's allow-list (per user and mandate) applied to
the models the provider plugins offer, and the default a run without a model gets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException

from nyla_host.identity import Identity
from nyla_host.state import HostState


@dataclass
class ModelChoice:
    """The models a caller may use (``allowed`` ``None``: every model) and their default."""

    specs: list[Any]
    allowed: list[str] | None
    default: str | None

    def check(self, model: str) -> None:
        """403 when the caller may not use ``model``, 400 when no plugin offers it."""
        if self.allowed is not None and model not in self.allowed:
            raise HTTPException(
                403,
                f"you may not use the model {model!r}; the models you may use: "
                f"{', '.join(self.allowed) or 'none'} (ask an administrator: nyla models allow)",
            )
        if not any(s.id == model for s in self.specs):
            raise HTTPException(400, f"unknown model {model!r}: GET /api/models lists them")


async def model_choice(state: HostState, identity: Identity) -> ModelChoice:
    """The caller's models: every offered model on their allow-list, and the default (the
    host's default model when allowed, else the best allowed agent model)."""
    kernel = state.kernel
    allowed = await kernel.model_access.allowed(identity.user_id, identity.mandate_id)
    specs = [s for s in kernel.plugins.models() if allowed is None or s.id in allowed]
    default = state.settings.default_model
    if allowed is not None and default not in allowed:
        agents = [
            s for s in specs if s.available and "agent" in {str(o) for o in s.operation_types}
        ]
        best = max(agents, key=lambda s: (s.quality_rank, s.speed_rank), default=None)
        default = best.id if best is not None else None
    return ModelChoice(specs=specs, allowed=allowed, default=default)
