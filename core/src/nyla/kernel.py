"""The kernel object a host holds: plugins, database and the services built on them.

This is the one place that wires: each service is built on first use with the sibling
services (or the narrow ports of its ``ports.py``) it uses, passed in, never with the kernel
itself (``.ci/service_deps.py`` in ``make lint`` holds the services to that). A dependency the
other way round (the job queue runs the sync, which runs its jobs on the queue) is passed as a
callable that looks the service up when it is first called.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

from nyla.db import Database
from nyla.plugins import PluginHost

#: what one action run outside an agent run (REST) may spend when nothing says otherwise
DEFAULT_ACTION_BUDGET_CHF = 1.0

if TYPE_CHECKING:  # the services are built lazily: importing them all costs startup
    from collections.abc import AsyncIterator

    from nyla.access.service import ServiceAccess
    from nyla.actions.catalog import ActionCatalog
    from nyla.actions.executor import ActionExecutor
    from nyla.actions.runs import WorkflowRunService
    from nyla.actions.workflows import WorkflowService
    from nyla.agent.durable import DurableRuns
    from nyla.agent.runtime import AgentRuntime
    from nyla.agent.spec import RunSpec
    from nyla.ai.access import ModelAccess
    from nyla.ai.service import AiService
    from nyla.billing.service import BillingService
    from nyla.connections.service import ConnectionService
    from nyla.features.service import FeatureService
    from nyla.files.store import FileStore
    from nyla.jobs.queue import ProcrastinateRunner
    from nyla.jobs.runtime import JobRunner
    from nyla.knowledge.service import KnowledgeService
    from nyla.models.agent import AgentEvent, RunContext
    from nyla.models.tools import Toolbox, ToolResult
    from nyla.walkers.service import SyncService


class Kernel:
    """Everything a host needs to run agents: the plugin registries, the database, and the
    services (AI, agent runtime, files, knowledge, features), each built on first use.

    ``Kernel()`` discovers installed plugins and uses the default database; tests pass an
    explicit :class:`PluginHost` and :class:`Database`.
    """

    def __init__(
        self,
        plugins: PluginHost | None = None,
        db: Database | None = None,
        *,
        settings: dict[str, Any] | None = None,
    ) -> None:
        if plugins is not None:
            self.__dict__["plugins"] = plugins
        if db is not None:
            self.__dict__["db"] = db
        self.settings: dict[str, Any] = dict(settings or {})

    @cached_property
    def plugins(self) -> PluginHost:
        """The plugin registries (discovered on first use)."""
        return PluginHost.discover()

    @cached_property
    def db(self) -> Database:
        """The database (embedded PostgreSQL unless ``NYLA_DATABASE_URL`` is set)."""
        return Database()

    @cached_property
    def ai(self) -> AiService:
        """The AI service: the one way to call a model."""
        from nyla.ai.service import AiService

        # ``governance: False`` (a kernel without a database: a benchmark, a task-count test)
        # neither restricts models per mandate nor bills; every real host keeps it on
        governed = self.settings.get("governance", True) is not False
        return AiService(
            self.plugins,
            self.settings.get("ai"),
            access=self.model_access if governed else None,
            spending=self.billing if governed else None,
        )

    @cached_property
    def billing(self) -> BillingService:
        """Billing: the ledger of every AI operation, the spending preflight, reports."""
        from nyla.billing.service import BillingService

        return BillingService(self.db, self.settings.get("billing"))

    @cached_property
    def model_access(self) -> ModelAccess:
        """The model allow-list: which models a user or mandate may use."""
        from nyla.ai.access import ModelAccess

        return ModelAccess(self.db)

    @cached_property
    def service_access(self) -> ServiceAccess:
        """Who may use the agent, the knowledge store and each connector (``nyla access``)."""
        from nyla.access.service import ServiceAccess

        return ServiceAccess(self.db)

    @cached_property
    def agent(self) -> AgentRuntime:
        """The agent runtime (ReAct loop, tools, toolboxes)."""
        from nyla.agent.ports import AgentServices
        from nyla.agent.runtime import AgentRuntime

        services = AgentServices(
            ai=self.ai,
            plugins=self.plugins,
            db=self.db,
            files=self.files,
            connections=self.connections,
            model_access=self.model_access,
            service_access=self.service_access,
            knowledge=lambda: self.knowledge,
            features=lambda: self.features,
            settings=self.settings,
            actions=lambda: self.action_toolboxes,
            workflows=lambda: self.workflows,
        )
        return AgentRuntime(services)

    @cached_property
    def actions(self) -> ActionCatalog:
        """The action catalog: the workflow methods and typed actions plugins contribute."""
        from nyla.actions.catalog import ActionCatalog

        return ActionCatalog(self.plugins.methods)

    @cached_property
    def action_executor(self) -> ActionExecutor:
        """The one way an action runs on every path (validation, owned ids, budget, the
        policy hook, deadline, result documents)."""
        from nyla.actions.executor import ActionExecutor
        from nyla.agent.policy import before_call_hook

        return ActionExecutor(self.actions, self.db, before_call=before_call_hook(self.plugins))

    @cached_property
    def action_toolboxes(self) -> dict[str, Toolbox]:
        """The action tools, one toolbox per method (the agent adds them to its toolboxes)."""
        from nyla.actions.tools import action_toolboxes

        return action_toolboxes(self.action_executor)

    @cached_property
    def workflows(self) -> WorkflowService:
        """Stored workflow graphs of action nodes, checked against the catalog."""
        from nyla.actions.workflows import WorkflowService

        return WorkflowService(self.db, self.actions, runs=lambda: self.workflow_runs)

    @cached_property
    def workflow_runs(self) -> WorkflowRunService:
        """Runs of stored workflows on the job runtime: node by node through the action
        executor, resumable after a crash, cancellable, their events stored."""
        from nyla.actions.runs import WorkflowRunService
        from nyla.agent.tool_services import tool_services

        return WorkflowRunService(
            self.db,
            self.workflows,
            self.actions,
            self.action_executor,
            self.jobs,
            lambda: tool_services(self.agent.services),
            prepare=self.agent.user_context,
            bus=self.runs.bus,  # the process's one listener wakes run followers
        )

    async def _resume_workflow_runs(self) -> None:
        """Boot recovery of workflow runs (the run service is built only when one is open)."""
        from nyla.actions.run_store import RunStore

        if await RunStore(self.db).open_runs():
            await self.workflow_runs.resume_interrupted()

    async def run_action(
        self,
        method: str,
        action: str,
        arguments: Any,
        context: RunContext,
        *,
        max_cost_chf: float | None = None,
        workflow_id: str | None = None,
    ) -> ToolResult:
        """Run one action outside an agent run (the host's REST route), as ``context``'s
        user, through the executor with the services a tool gets, under a budget (the
        smaller of ``max_cost_chf`` and :meth:`action_budget_chf`) and the policy hook, as
        an agent's call runs. ``workflow_id``: the caller's chat workflow its result
        documents are bound to (refused when the caller may not change it). An action is
        one of the agent's tools run directly: it needs ``service.agent``, as a workflow run
        does, and what the tool needs in a run (``nyla.access``)."""
        from nyla.actions.bridge import WorkflowBindingError, open_workflow
        from nyla.agent.tool_services import tool_services
        from nyla.models.tools import ToolContext

        # the caller's account as a run's: service.agent (ServiceAccessDenied without it),
        # the services they may not use (the executor refuses actions needing one), models
        context = await self.agent.user_context(context)
        cap = self.action_budget_chf()
        budget = cap if max_cost_chf is None else min(max_cost_chf, cap)
        workflow = None
        if workflow_id is not None:
            try:
                workflow = await open_workflow(self.files.workflows, workflow_id, context, self.db)
            except WorkflowBindingError as exc:
                return exc.result
        ctx = ToolContext(
            run=context,
            services=tool_services(self.agent.services),
            remaining_budget_chf=budget,
            workflow=workflow,
            task_number=1,
            action_number=1,
            round=1,
        )
        return await self.action_executor.run(method, action, arguments, ctx)

    def action_budget_chf(self) -> float:
        """What one action run outside an agent run may spend at most (CHF): the setting
        ``action_max_cost_chf`` (``NYLA_ACTION_MAX_COST_CHF``), else
        :data:`DEFAULT_ACTION_BUDGET_CHF`."""
        import os

        raw = self.settings.get("action_max_cost_chf")
        if raw is None:
            raw = os.environ.get("NYLA_ACTION_MAX_COST_CHF")
        if raw in (None, ""):
            return DEFAULT_ACTION_BUDGET_CHF
        try:
            return max(0.0, float(raw))
        except ValueError:
            from nyla.errors import ConfigurationError

            raise ConfigurationError(
                f"action_max_cost_chf must be a number of CHF, got {raw!r}"
            ) from None

    @cached_property
    def files(self) -> FileStore:
        """The scoped file store (FileItem, folders, chat documents)."""
        from nyla.files.store import FileStore

        return FileStore(self.db)

    @cached_property
    def knowledge(self) -> KnowledgeService:
        """The knowledge store (indexing, semantic search, agent context, consent)."""
        from nyla.knowledge.service import KnowledgeService

        return KnowledgeService(self.db, self.ai, self.settings)

    @cached_property
    def features(self) -> FeatureService:
        """Feature data access (table tools, validator, data agent)."""
        from nyla.features.service import FeatureService

        return FeatureService(self.db, self.plugins, self._agent_loop)

    def _agent_loop(self, spec: RunSpec) -> AsyncIterator[AgentEvent]:
        """The agent loop on this kernel (the feature data agent runs one)."""
        return self.agent.loop(spec)

    @cached_property
    def connections(self) -> ConnectionService:
        """Connections to external services, their tokens, and connector sessions."""
        from nyla.connections.service import ConnectionService
        from nyla.knowledge.consent import purge_connection

        return ConnectionService(
            self.db, self.plugins, purge_index=purge_connection, settings=self.settings
        )

    @property
    def jobs_backend(self) -> str:
        """Where background jobs run: ``inprocess`` (default) or ``procrastinate``
        (``NYLA_JOBS``)."""
        import os

        return str(self.settings.get("jobs") or os.environ.get("NYLA_JOBS") or "inprocess")

    @cached_property
    def jobs(self) -> JobRunner | ProcrastinateRunner:
        """The job runner (heartbeat, boot recovery, zombie killer, cancel, periodic tasks:
        the day's storage snapshot)."""
        from nyla.billing.schedule import add_snapshot_schedule

        if self.jobs_backend == "procrastinate":
            from nyla.actions.runs import add_workflow_task
            from nyla.agent.run_job import add_run_task
            from nyla.jobs.queue import ProcrastinateRunner

            queue = ProcrastinateRunner(self.db, lambda: self.sync)
            add_run_task(queue, lambda: self.runs)  # agent runs on workers too
            add_workflow_task(queue, lambda: self.workflow_runs)  # and workflow runs
            queue.recoveries.append(self._resume_workflow_runs)
            add_snapshot_schedule(queue, lambda: self.billing)
            return queue
        from nyla.jobs.runtime import JobRunner

        runner = JobRunner(self.db, recoveries=[self._resume_workflow_runs])
        add_snapshot_schedule(runner, lambda: self.billing)
        return runner

    @cached_property
    def runs(self) -> DurableRuns:
        """Durable runs: recorded, their events written before they stream, driven here or
        (``NYLA_JOBS=procrastinate``) by a ``nyla worker``, streamed by any process."""
        from nyla.agent.durable import DurableRuns

        defer = None
        if self.jobs_backend == "procrastinate":
            from nyla.agent.run_job import run_deferrer

            defer = run_deferrer(cast("ProcrastinateRunner", self.jobs))
        return DurableRuns(self.db, self.agent, self.files.workflows, defer=defer)

    @cached_property
    def sync(self) -> SyncService:
        """Syncs of data sources into the knowledge store (walkers, as jobs)."""
        from nyla.walkers.runner import WalkerRunner
        from nyla.walkers.service import SyncService

        knowledge = self.knowledge
        runner = WalkerRunner(
            self.db, self.plugins, self.connections, knowledge.indexer, knowledge.indexes
        )
        defer = None
        if self.jobs_backend == "procrastinate":
            defer = cast("ProcrastinateRunner", self.jobs).defer_sync
        return SyncService(
            self.db,
            runner,
            self.connections,
            knowledge.governance,
            self.jobs,
            defer=defer,
            settings=self.settings,
            access=self.service_access,
        )

    def derived_key(self, purpose: str) -> bytes:
        """A key for ``purpose`` (signing links, say) derived from the configured secret
        (``NYLA_SECRET_KEY``, see :mod:`nyla.connections.keys`), never that secret itself."""
        from nyla.connections.crypto import TokenCipher

        explicit = self.settings.get("secret_key")
        cipher = (
            TokenCipher([explicit])
            if explicit
            else TokenCipher.from_config(self.settings.get("data_dir"))
        )
        return cipher.derive_key(purpose)

    async def aclose(self) -> None:
        """Release pooled connections and clients."""
        if "sync" in self.__dict__:  # a schedule's ticks must not outlive the kernel
            await self.sync.aclose()
        if "runs" in self.__dict__:
            await self.runs.aclose()
        if "jobs" in self.__dict__:
            await self.jobs.aclose()
        if "billing" in self.__dict__:  # rows of calls not yet written
            try:
                await self.billing.flush(runs=True)
            except Exception as exc:  # the database is gone: say so, still release the rest
                import logging

                logging.getLogger(__name__).error("ledger rows not written at close: %s", exc)
        if "db" in self.__dict__:
            await self.db.dispose()
