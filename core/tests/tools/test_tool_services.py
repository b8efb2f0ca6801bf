"""The services port of a run's tools: what a tool gets outside a run, and the knowledge
policy a download inherits, read through the port from the real store."""

from __future__ import annotations

import pytest

from nyla.agent.tool_services import tool_services
from nyla.models.agent import RunContext
from nyla.models.tool_services import ServiceUnavailableError
from nyla.models.tools import ToolContext


def test_a_context_outside_a_run_names_the_missing_service() -> None:
    ctx = ToolContext()
    for name in ("files", "connections", "ai", "knowledge", "features"):
        with pytest.raises(ServiceUnavailableError, match=f"no {name} service"):
            getattr(ctx.services, name)


async def test_the_port_reaches_the_run_user_s_files_and_the_data_source_policy(
    db, make_kernel
) -> None:
    kernel = make_kernel(db=db)
    services = tool_services(kernel.agent.services)
    run = RunContext(user_id="u1")
    item = await services.files.save("a.txt", b"hello", run)
    assert await services.files.read_text(item.id, run) == "hello"
    assert await services.files.get(item.id, RunContext(user_id="u2")) is None

    governance = kernel.knowledge.governance
    await governance.add_connection("c1", "msft", user_id="u1")
    await governance.add_data_source("ds-root", "c1", "/", user_id="u1")
    await governance.add_data_source("ds-hr", "c1", "/hr", user_id="u1", neutralize=True)
    sources = await services.knowledge.data_sources("c1")
    assert [s.path for s in sources] == ["/", "/hr"]
    policy = await services.knowledge.resolve_policy("c1", "/hr/salaries.xlsx", "neutralize")
    assert policy.value is True and policy.source_id == "ds-hr"
    outside = await services.knowledge.resolve_policy("c1", "/sales/q1.xlsx", "neutralize")
    assert outside.value is False and outside.source_id is None
