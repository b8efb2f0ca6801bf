"""What a durable run stores to run anywhere as it would where it started: the agent's
prompt, its :class:`AgentConfig` and the :class:`RunContext` the caller's account gave it,
as JSON in the run's row (``host_runs.spec``)."""

from __future__ import annotations

from typing import Any

from nyla.models.agent import AgentConfig, RunContext


def stored_spec(prompt: str, config: AgentConfig, context: RunContext) -> dict[str, Any]:
    """What a run needs to run anywhere as it would here (JSON)."""
    return {
        "prompt": prompt,
        "config": config.model_dump(mode="json"),
        "context": context.model_dump(mode="json"),
    }


def loaded_spec(spec: dict[str, Any]) -> tuple[str, AgentConfig, RunContext]:
    """The prompt, config and context :func:`stored_spec` stored."""
    return (
        str(spec["prompt"]),
        AgentConfig.model_validate(spec["config"]),
        RunContext.model_validate(spec["context"]),
    )
