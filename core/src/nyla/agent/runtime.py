"""The agent runtime (``kernel.agent``): activates toolboxes, wires the knowledge store and the
chat workflow into a run, and lets the caller cancel a running run."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncGenerator, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nyla.access.permissions import KNOWLEDGE
from nyla.agent import events
from nyla.agent.loop import run_agent_loop
from nyla.agent.run import new_neutralization_session
from nyla.agent.spec import RunSpec
from nyla.agent.telemetry import traced
from nyla.agent.tool_services import tool_services
from nyla.agent.toolboxes import ToolboxSession, open_session
from nyla.files.conversations import history_messages
from nyla.models.agent import AgentConfig, AgentEvent, AgentTrace, EventType, RunContext
from nyla.models.ai import Message
from nyla.models.feature import declares_graphical_editor
from nyla.models.run_toolboxes import RunToolboxes
from nyla.models.tools import Tool, Toolbox

if TYPE_CHECKING:
    from nyla.agent.ports import AgentServices

log = logging.getLogger(__name__)


class AgentRuntime:
    """Runs agents on the services the kernel hands it (``kernel.agent``):
    ``async for event in kernel.agent.run(prompt): ...``.

    Each run gets its toolboxes (defaults + the user's connections + the feature's +
    ``config.initial_toolboxes`` + requested at run time), the knowledge store's context
    builder and round recorder (both optional and non-blocking), and — when
    ``context.workflow_id`` is set — the chat workflow that produced files are bound to, whose
    earlier prompts and answers (a conversation) the agent sees as its history. The FINAL
    event carries ``citations``: the knowledge hits the run's context quoted.
    """

    def __init__(self, services: AgentServices) -> None:
        self.services = services
        self._cancels: dict[str, asyncio.Event] = {}
        self._bound: set[int] = set()

    @property
    def running(self) -> list[str]:
        """Ids of the runs in progress."""
        return list(self._cancels)

    def cancel(self, run_id: str) -> bool:
        """Ask a running run to stop; it ends with status ``cancelled``. False if not running."""
        event = self._cancels.get(run_id)
        if event is None:
            return False
        event.set()
        return True

    async def connected_services(self, user_id: str) -> list[str]:
        """Services of the user's active connections: they switch on the toolboxes that
        require them (``email`` with an ``msft`` connection, ...)."""
        if not self.services.plugins.connectors:
            return []
        connections = await self.services.connections.list(user_id)
        return sorted({c.service for c in connections if c.status == "active"})

    async def user_context(self, context: RunContext, *, models_read: bool = False) -> RunContext:
        """``context`` with what the user's account says: the services of their active
        connections (their toolboxes come on), the models their allow-list permits (the
        selector then picks no other, for the run and everything it starts) and the services
        they may not use (``denied_services``; the tool registry refuses tools that need
        one). Raises :class:`~nyla.access.permissions.ServiceAccessDenied` when they may not
        run the agent at all (``service.agent``). ``models_read``: the caller read the
        allow-list already (``context.allowed_models``, ``None`` for every model)."""
        denied = await self._denied_services(context)
        allowed = context.allowed_models
        if allowed is None and not models_read:
            allowed = await self.services.model_access.allowed(context.user_id, context.mandate_id)
        connections = await self.connected_services(context.user_id)
        return context.model_copy(
            update={
                "connections": sorted({*context.connections, *connections}),
                "allowed_models": allowed,
                "denied_services": denied,
            }
        )

    async def _denied_services(self, context: RunContext) -> list[str]:
        """The service permissions the run's caller lacks (raises when it is the agent)."""
        access = self.services.service_access
        if access is None:
            return list(context.denied_services)
        from nyla.access.run import run_denials

        plugins = self.services.plugins
        services = {*plugins.connectors}  # the installed connectors and those toolboxes need
        for toolbox in plugins.toolboxes.values():
            services.update(getattr(toolbox, "connection_services", ()) or ())
        return await run_denials(access, context, services)

    async def run_toolboxes(self, context: RunContext) -> dict[str, Toolbox]:
        """The toolboxes the plugins' :class:`~nyla.models.run_toolboxes.RunToolboxes`
        resolve for a run of ``context`` (each bound to the kernel's database first); a
        source that fails or is slow is logged and left out."""
        found: dict[str, Toolbox] = {}
        for source in self.services.plugins.toolboxes.values():
            if not isinstance(source, RunToolboxes):
                continue
            try:
                if id(source) not in self._bound:
                    source.bind(self.services.db)
                    self._bound.add(id(source))
                async with asyncio.timeout(source.resolve_timeout_s):
                    resolved = await source.for_run(context)
            except Exception as exc:  # a plugin's storage must not stop the run
                log.warning("toolboxes of %s left out of this run: %r", source.id, exc)
                continue
            for toolbox in resolved:
                found.setdefault(toolbox.id, toolbox)
        return found

    def toolbox_session(
        self,
        config: AgentConfig,
        context: RunContext,
        *,
        extra_tools: Iterable[Tool] = (),
        run_toolboxes: Mapping[str, Toolbox] | None = None,
    ) -> ToolboxSession:
        """The toolboxes a run with this config and context starts with (the graphical
        editor's too when the run's feature declares it); ``run_toolboxes``: those
        :meth:`run_toolboxes` resolved for it."""
        toolboxes = {
            **(run_toolboxes or {}),
            **{
                k: v
                for k, v in self.services.plugins.toolboxes.items()
                if not isinstance(v, RunToolboxes)
            },
        }
        if self.services.actions is not None:
            toolboxes = {**toolboxes, **self.services.actions()}
        feature = self.services.plugins.features.get(context.feature_code or "")
        return open_session(
            toolboxes,
            config,
            context,
            extra_tools=extra_tools,
            graphical_editor=declares_graphical_editor(feature),
        )

    def run(
        self,
        prompt: str,
        config: AgentConfig | None = None,
        context: RunContext | None = None,
        *,
        run_id: str | None = None,
        continued: list[Message] | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """Run the agent on ``prompt``; yields STATUS (first: ``started`` with the run id),
        CHUNK, TOOL_CALL, TOOL_RESULT, ERROR, then FINAL and AGENT_SUMMARY (see
        :meth:`execute`). ``continued``: the completed rounds of an interrupted run of
        ``prompt``, to go on from (see :class:`RunSpec`)."""
        spec = RunSpec(
            prompt,
            config or AgentConfig(),
            context or RunContext(),
            run_id=run_id,
            continued=continued,
        )
        return traced(spec, self.execute(spec))

    def loop(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
        """The bare loop over ``spec`` as it is (its own tools, no toolboxes, knowledge
        context or workflow added; see :func:`~nyla.agent.loop.run_agent_loop`)."""
        return run_agent_loop(self.services, spec)

    def execute(self, spec: RunSpec) -> AsyncGenerator[AgentEvent, None]:
        """Run ``spec`` with what the runtime adds: the toolboxes of its config and context
        (their tools come after ``spec.tools``), the chat workflow of ``context.workflow_id``
        with its history, the knowledge context, the tools' services and a cancel event
        (:class:`RuntimeSetup`, done by the loop's own generator)."""
        return run_agent_loop(self.services, spec, RuntimeSetup(self, spec))

    async def _run_prompt(
        self, spec: RunSpec, session: ToolboxSession, *, knowledge: bool
    ) -> str | None:
        """The run's system prompt: the caller's (else the base prompt with the data-source
        block), with the metadata of the files the prompt attaches or references (once, before
        the loop starts; see :mod:`nyla.agent.file_briefing`)."""
        from nyla.agent.conversation import DEFAULT_SYSTEM_PROMPT
        from nyla.agent.file_briefing import file_briefing, with_briefing

        config, context = spec.config, spec.context
        base = spec.system_prompt or await self._system_prompt(config, context, session)
        block = await file_briefing(self.services, spec.prompt, context, knowledge=knowledge)
        return with_briefing(base, config.system_prompt or DEFAULT_SYSTEM_PROMPT, block)

    async def _system_prompt(
        self, config: AgentConfig, context: RunContext, session: ToolboxSession
    ) -> str | None:
        """The base prompt plus the search-first block when the user has connections."""
        from nyla.agent.conversation import DEFAULT_SYSTEM_PROMPT
        from nyla.tools.datasources import data_source_prompt

        try:
            block = await data_source_prompt(
                self.services.connections, context.user_id, session.tools
            )
        except Exception as exc:  # no database, no connections: the run goes on without
            log.info("no data-source block: %s", exc)
            return None
        if block is None:
            return None
        return f"{config.system_prompt or DEFAULT_SYSTEM_PROMPT}\n\n{block}"

    async def trace(self, run_id: str) -> AgentTrace | None:
        """The persisted trace of a run."""
        from nyla.agent.trace import load_trace

        return await load_trace(self.services.db, run_id)

    async def _workflow(self, context: RunContext) -> Any:
        if not context.workflow_id:
            return None
        try:
            return await self.services.files.workflows.load(context.workflow_id, context)
        except Exception as exc:  # files still work by id without a workflow
            log.warning("workflow %s not available: %s", context.workflow_id, exc)
            return None

    def _knowledge(self) -> Any:
        try:
            return self.services.knowledge()
        except ModuleNotFoundError:
            return None
        except Exception as exc:
            log.warning("knowledge store not available: %s", exc)
            return None

    def _context_builder(self, used: list[Any], neutralization: Any) -> Any:
        knowledge = self._knowledge()
        builder = getattr(knowledge, "agent_context_builder", None)
        return builder(used, neutralization) if builder is not None else None

    def _round_recorder(self, context: RunContext) -> Any:
        knowledge = self._knowledge()
        recorder = getattr(knowledge, "round_recorder", None)
        return recorder(context) if recorder is not None else None


class RuntimeSetup:
    """The runtime's part of one run (:class:`~nyla.agent.loop.RunSetup`): its toolboxes
    and first event, then the spec with the workflow, the knowledge context and round
    recorder, the tools' services and a cancel event; the FINAL event's citations; at the
    end, round memory flushed and the cancel event dropped."""

    def __init__(self, runtime: AgentRuntime, spec: RunSpec) -> None:
        self.runtime, self.given = runtime, spec
        self.run_id = spec.run_id or uuid.uuid4().hex
        self.cancel = asyncio.Event()
        #: the knowledge hits the run's context quoted (the FINAL event's citations)
        self.used: list[Any] = []
        self.session: ToolboxSession | None = None
        #: the round recorder, once the loop has its spec (flushed at the end)
        self.recorder: Any = None

    async def start(self) -> AgentEvent:
        runtime, spec = self.runtime, self.given
        runtime._cancels[self.run_id] = self.cancel
        self.session = runtime.toolbox_session(
            spec.config,
            spec.context,
            extra_tools=spec.tools,
            run_toolboxes=await runtime.run_toolboxes(spec.context),
        )
        # the first event before any other database work (a RunToolboxes plugin's
        # query is the one before it): a client sees the run start at once
        return events.status(
            0,
            "started",
            runId=self.run_id,
            toolboxes=list(self.session.active),
            model=spec.config.model,
        )

    async def spec(self) -> RunSpec:
        runtime, spec, session = self.runtime, self.given, self.session
        assert session is not None  # (start came first)
        context, run_id = spec.context, self.run_id
        workflow = await runtime._workflow(context)
        knowledge = KNOWLEDGE not in context.denied_services  # nyla.access
        recorder = runtime._round_recorder(context) if knowledge else None
        # one placeholder session for the run's model calls and its context's embedding
        # of the prompt: the same placeholders, and the prompt neutralized once
        neutralization = spec.neutralization or new_neutralization_session(
            runtime.services.ai, context
        )
        made = replace(
            spec,
            tools=session.tools,
            system_prompt=await runtime._run_prompt(spec, session, knowledge=knowledge),
            history=spec.history
            or (history_messages(workflow, run_id) if workflow is not None else None),
            run_id=run_id,
            services=tool_services(runtime.services),
            toolboxes=session,
            workflow=workflow,
            context_builder=(
                runtime._context_builder(self.used, neutralization) if knowledge else None
            ),
            round_recorder=recorder,
            cancel=self.cancel,
            neutralization=neutralization,
        )
        self.recorder = recorder
        return made

    def final(self, event: AgentEvent) -> AgentEvent:
        if event.type is EventType.FINAL:
            event.data["citations"] = citations(self.used)
        return event

    async def end(self) -> None:
        try:
            flush = getattr(self.recorder, "flush", None)
            if flush is not None:  # round memory held until the end (see round_recorder)
                await flush()
        finally:
            self.runtime._cancels.pop(self.run_id, None)


#: citations a FINAL event carries at most
MAX_CITATIONS = 5
#: a file is cited when its best hit scores at least this share of the best file's: the
#: context quotes more than the answer leans on, and a list of every near-miss is noise
CITATION_SHARE = 0.5


def citations(hits: list[Any]) -> list[dict[str, Any]]:
    """The knowledge hits a run's context quoted, one per file, best score first:
    ``{title, path, fileId, connectionId, score, url}``; ``url`` is the vendor's web address
    of a synced item (``None`` otherwise: a host that can open the source fills it in)."""
    best: dict[str, Any] = {}
    for hit in hits:
        seen = best.get(hit.file_id)
        if seen is None or hit.score > seen.score:
            best[hit.file_id] = hit
    ranked = sorted(best.values(), key=lambda h: -h.score)[:MAX_CITATIONS]
    if ranked and ranked[0].score > 0:
        ranked = [h for h in ranked if h.score >= CITATION_SHARE * ranked[0].score]
    return [
        {
            "title": h.file_name,
            "path": h.source_path or h.context_ref or h.file_name,
            "fileId": h.file_id,
            "connectionId": h.connection_id,
            "score": round(float(h.score), 4),
            "url": getattr(h, "web_url", None),
        }
        for h in ranked
    ]
