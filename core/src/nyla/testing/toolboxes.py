"""Test set-up for toolboxes over connectors: the user's connection to a fake vendor, a tool
called as an agent run calls it, and a test module of another plugin loaded by its path.

With the ``vendor_kernel`` fixture (a kernel whose connectors reach the fake vendor at the
wire) a toolbox's ``conftest.py`` is a few lines::

    @pytest.fixture
    def kernel(vendor_kernel, clickup):
        import nyla_connector_clickup  # the tests' connector; the toolbox never imports it
        import nyla_toolbox_clickup

        return vendor_kernel(clickup, nyla_connector_clickup, nyla_toolbox_clickup)

    @pytest_asyncio.fixture
    async def connection(kernel):
        return await add_connection(kernel, "clickup", "mia", "mia@example.com")

and a test calls ``await call_tool(kernel, "searchClickUpTasks", {"mine": True}, user="mia")``.
"""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from nyla.models.agent import RunContext
from nyla.models.ai import ToolCall
from nyla.models.datasource import ConnectionInfo, TokenGrant
from nyla.models.tools import ToolContext, ToolResult


async def add_connection(
    kernel: Any,
    service: str,
    user: str,
    account: str = "",
    *,
    token: str = "access-1",
    refresh_token: str | None = "refresh-1",
    settings: dict[str, Any] | None = None,
) -> ConnectionInfo:
    """A connection of ``user`` to ``service`` (with ``settings``), holding ``token``
    valid for another hour and ``refresh_token``."""
    grant = TokenGrant(
        access_token=token,
        refresh_token=refresh_token,
        expires_at=datetime.now(UTC) + timedelta(hours=1),
    )
    added: ConnectionInfo = await kernel.connections.add(
        service, user_id=user, account=account, grant=grant, settings=settings or {}
    )
    return added


async def call_tool(
    kernel: Any, name: str, arguments: dict[str, Any] | str, *, user: str
) -> ToolResult:
    """The tool ``name`` of the kernel's toolboxes called as an agent run of ``user`` calls
    it: arguments as JSON, validated, owned ids checked, the plugins' before-tool-call
    policies asked, the handler's failures turned into results."""
    from nyla.agent.registry import ToolRegistry, before_call_hook

    tools = [t for box in kernel.plugins.toolboxes.values() for t in box.tools if t.name == name]
    if not tools:
        raise LookupError(f"no toolbox of this kernel has a tool {name!r}")
    registry = ToolRegistry(tools, before_call=before_call_hook(kernel.plugins), database=kernel.db)
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    ctx = tool_context(kernel, user=user)
    done = await registry.dispatch(ToolCall(id="call-1", name=name, arguments=raw), ctx)
    return done.result


def tool_context(kernel: Any, *, user: str, mandate: str | None = None) -> ToolContext:
    """The context a tool of an agent run of ``user`` (in ``mandate``) on ``kernel`` gets: the
    run context and the kernel's services as tools reach them (``ctx.services``)."""
    from nyla.agent.tool_services import tool_services

    run = RunContext(user_id=user, mandate_id=mandate)
    return ToolContext(run=run, services=tool_services(kernel.agent.services))


def import_file(path: Path | str, name: str | None = None) -> Any:
    """The Python file at ``path`` imported as a module (``name``: its module name, by
    default ``<stem>_of_<parent folder>``). Plugins never import each other, so a toolbox's
    tests reach its connector's fake vendor this way."""
    path = Path(path)
    name = name or f"{path.stem}_of_{path.parent.parent.name}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
