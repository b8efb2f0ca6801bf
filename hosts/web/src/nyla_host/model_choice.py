"""Which models a caller may choose: the kernel's allow-list (per user and mandate) applied to
the models the provider plugins offer, and the default a run without a model gets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException

from nyla import NylaError, OperationType, RunContext
from nyla_host.identity import Identity
from nyla_host.state import HostState


@dataclass
class ModelChoice:
    """The models a caller may use (``allowed`` ``None``: every model), the host's default
    when they may use it, and ``default``: the model a run without one gets."""

    specs: list[Any]
    allowed: list[str] | None
    host_default: str | None
    default: str | None

    def for_run(self, model: str | None) -> str | None:
        """The model a run asks for: ``model`` (403 when the caller may not use it, 400 when
        no plugin offers it), else the host's default when allowed, else ``None`` (the
        selector chooses, inside the allow-list the run's context carries)."""
        if model is None:
            return self.host_default
        if self.allowed is not None and model not in self.allowed:
            raise HTTPException(
                403,
                f"you may not use the model {model!r}; the models you may use: "
                f"{', '.join(self.allowed) or 'none'} (ask an administrator: nyla models allow)",
            )
        if not any(s.id == model for s in self.specs):
            raise HTTPException(400, f"unknown model {model!r}: GET /api/models lists them")
        return model


async def model_choice(state: HostState, identity: Identity) -> ModelChoice:
    """The caller's models: every offered model on their allow-list, and the default (the
    host's default model when allowed, else the one the selector picks for an agent run)."""
    kernel = state.kernel
    offered = kernel.plugins.models()
    # the model lists and the provider lists of the caller's mandate and user
    allowed = await kernel.model_access.effective(identity.user_id, identity.mandate_id, offered)
    specs = [s for s in offered if allowed is None or s.id in allowed]
    host_default = state.settings.default_model
    if allowed is not None and host_default not in allowed:
        host_default = None
    default = host_default
    if default is None:
        context = RunContext(user_id=identity.user_id, allowed_models=allowed)
        try:
            default = kernel.ai.select_model(
                OperationType.AGENT, context=context, needs_tools=True
            ).id
        except NylaError:  # no model an agent run could use: the page says so
            default = None
    return ModelChoice(specs=specs, allowed=allowed, host_default=host_default, default=default)
