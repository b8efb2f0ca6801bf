"""What one run of the agent loop is given: :class:`RunSpec`.

:func:`nyla.agent.loop.run_agent_loop` takes one; the agent runtime (``kernel.agent.run``)
builds it from the prompt, config and context a caller passes and adds the run's toolboxes,
workflow, knowledge context and tool services; the feature data agent builds its own over a
feature's table tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nyla.models.agent import AgentConfig, RoundToolResult, RunContext
from nyla.models.ai import Message
from nyla.models.chat import ChatWorkflow
from nyla.models.tool_services import NoServices, ToolServices
from nyla.models.tools import Tool, ToolboxRequests

#: ``builder(prompt, context) -> knowledge block`` for the round's system prompt
ContextBuilder = Callable[[str, RunContext], Awaitable[str]]


class RoundRecorder(Protocol):
    """Called after each round with what the round leaves in round memory (the knowledge
    store's :meth:`~nyla.knowledge.service.KnowledgeService.round_recorder` gives one)."""

    def __call__(
        self,
        *,
        run_id: str,
        round: int,
        context: RunContext,
        file_refs: Sequence[str] = (),
        tool_results: Sequence[RoundToolResult] = (),
        decisions: Sequence[str] = (),
    ) -> Awaitable[None]: ...


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One run of the loop.

    ``tools`` is read again every round (a ``requestToolbox`` handler may extend the same list
    in place). ``system_prompt`` replaces the default base prompt (the temporal block is
    always added); ``history`` (a conversation's earlier prompts and answers) comes before
    ``prompt``. ``run_id`` names the run (a new id without one); ``parent_run_id`` is the run
    that started this one (a sub-agent).

    What the run's tools get in their :class:`~nyla.models.tools.ToolContext`: ``services``,
    ``toolboxes`` and ``workflow``. ``context_builder`` supplies a knowledge block per round
    and ``round_recorder`` is called after each round; failures of either are logged and the
    run goes on. ``cancel`` set by the caller ends the run with status ``cancelled``.
    ``neutralization`` shares a placeholder session (a sub-agent passes its parent's).
    ``continued`` resumes an interrupted run after its completed rounds.
    """

    prompt: str
    config: AgentConfig = field(default_factory=AgentConfig)
    context: RunContext = field(default_factory=RunContext)
    tools: list[Tool] = field(default_factory=list)
    system_prompt: str | None = None
    history: list[Message] | None = None
    run_id: str | None = None
    parent_run_id: str | None = None
    services: ToolServices = field(default_factory=NoServices)
    toolboxes: ToolboxRequests | None = None
    workflow: ChatWorkflow | None = None
    context_builder: ContextBuilder | None = None
    round_recorder: RoundRecorder | None = None
    cancel: asyncio.Event | None = None
    neutralization: Any = None
    #: the rounds an interrupted run completed (its model turns and their tool results),
    #: after ``prompt``: a resumed run goes on from there, its rounds counted on
    continued: list[Message] | None = None
