"""The connection toolboxes' tools of one user, callable outside an agent run (nyla's MCP
server offers them to other agents) through the same gate a run's calls pass.

Which tools: those of every toolbox that needs a connection service (``email`` with ``msft``,
``jira``, ``clickup``, ...) the user has an active connection for and may use
(``service.connector`` and ``service.connector.<name>``, :mod:`nyla.access`); nothing else
(denied by default). How a call runs: the run's :class:`~nyla.agent.registry.ToolRegistry`
(arguments parsed and validated, owned ids checked, service access, the plugins'
``nyla_before_tool_call`` policies, the tool's timeout, failures as structured results) with
a tool context built as a run builds one, so the handler reaches the user's own connection
only. What the result says is the caller's to neutralise before it leaves (it goes to another
agent's model, see ``nyla_host.mcp_server``).
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from nyla.access.permissions import CONNECTOR, connector
from nyla.agent.registry import ToolRegistry, before_call_hook, result_text
from nyla.agent.tool_services import tool_services
from nyla.agent.toolboxes import REQUEST_TOOLBOX, ToolboxSession
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import ToolCall
from nyla.models.tools import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from nyla.agent.runtime import AgentRuntime


class ConnectionTools:
    """The connection tools ``context``'s user may call (:meth:`open`), and the call."""

    def __init__(self, runtime: AgentRuntime, context: RunContext, session: ToolboxSession):
        self.runtime, self.context, self.session = runtime, context, session
        self.tools: list[Tool] = [t for t in session.tools if t.name != REQUEST_TOOLBOX]

    @classmethod
    async def open(cls, runtime: AgentRuntime, context: RunContext) -> ConnectionTools:
        """The tools of the connection toolboxes of ``context``'s user: their active
        connections' services, less those service access denies them."""
        services = runtime.services
        plugins = services.plugins
        toolboxes = {k: t for k, t in plugins.toolboxes.items() if t.connection_services}
        needed = {s for t in toolboxes.values() for s in t.connection_services}
        denied = set(context.denied_services)
        if services.service_access is not None:
            denied.update(await services.service_access.denied_for_run(context, needed))
        connected = set(await runtime.connected_services(context.user_id))
        usable = (
            set() if CONNECTOR in denied else {s for s in connected if connector(s) not in denied}
        )
        active = [k for k, t in toolboxes.items() if usable & set(t.connection_services)]
        allowed = context.allowed_models
        if allowed is None:
            allowed = await services.model_access.allowed(context.user_id, context.mandate_id)
        context = context.model_copy(
            update={
                "connections": sorted(connected),
                "denied_services": sorted(denied),
                "allowed_models": allowed,
            }
        )
        return cls(runtime, context, ToolboxSession(toolboxes, active))

    def get(self, name: str) -> Tool | None:
        """The tool called ``name`` among :attr:`tools`."""
        return next((t for t in self.tools if t.name == name), None)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one call as a run's tool call runs; every failure is a result. A fresh registry
        per call: repeats are counted within a run, and a caller outside one has none."""
        services = self.runtime.services
        registry = ToolRegistry(
            self.tools,
            before_call=before_call_hook(services.plugins),
            default_timeout_s=AgentConfig().tool_timeout_s,
            database=services.db,
        )
        call_id = f"ext-{uuid.uuid4().hex[:12]}"
        ctx = ToolContext(
            run=self.context,
            services=tool_services(services),
            call_id=call_id,
            toolboxes=self.session,
        )
        raw = json.dumps(arguments, ensure_ascii=False, default=str)
        done = await registry.dispatch(ToolCall(id=call_id, name=name, arguments=raw), ctx)
        return done.result

    @staticmethod
    def text(result: ToolResult) -> str:
        """What a model would see of ``result`` (errors as JSON with their repair hints)."""
        return result_text(result)
