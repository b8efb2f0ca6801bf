"""What a run passes down to everything it starts (AI tools, sub-agents, at any depth).

A sub-agent inherits its parent's identity and scope (the :class:`RunContext`, including
``require_neutralization`` and the model restriction), the remaining rounds and budget
(``ToolContext.remaining_*``), the placeholder session (``ToolContext.neutralization``) and the
parent's model (``ToolContext.model``). The restriction is carried by the context, so a tool
that starts model calls of its own cannot step outside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nyla.models.agent import AgentConfig, RunContext

if TYPE_CHECKING:
    from nyla.agent.ports import AgentPlugins


def on_premises_providers(plugins: AgentPlugins) -> list[str]:
    """Providers with at least one on-premises model."""
    return sorted({s.provider for s in plugins.models() if s.on_premises})


def restricted_context(
    plugins: AgentPlugins, config: AgentConfig, context: RunContext
) -> RunContext:
    """The run's context with its model restriction made explicit: a run pinned to an
    on-premises model may only reach on-premises providers (no cloud fallback, no cloud
    sub-agent); an explicit ``allowed_providers`` is kept as it is."""
    if context.allowed_providers is not None or not config.model:
        return context
    spec = next((s for s in plugins.models() if s.id == config.model), None)
    if spec is None or not spec.on_premises:
        return context
    return context.model_copy(update={"allowed_providers": on_premises_providers(plugins)})
