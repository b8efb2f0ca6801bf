"""Every agent run reads its user's MCP servers; they are kept in the process until the
table changes. A server another process adds or removes is in the other kernel's next run
once the commit's notification arrived, without a read in between."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import nyla_toolbox_mcp
from nyla.sdk import RunContext
from nyla.testing import plugin_kernel
from nyla_toolbox_mcp.cli import opened
from nyla_toolbox_mcp.run_toolboxes import McpToolboxes


async def _until(done: Callable[[], bool], timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while not done():
            await asyncio.sleep(0.01)


async def test_a_server_added_by_another_process_is_in_the_next_run(store, demo):
    kernel = plugin_kernel(nyla_toolbox_mcp, db=store.db, builtins=False)
    context = RunContext(user_id="ada")
    assert "mcp:demo" not in await kernel.agent.run_toolboxes(context)
    source = next(s for s in kernel.plugins.toolboxes.values() if isinstance(s, McpToolboxes))
    bound = source._store
    assert bound is not None
    reads = [0]
    real = bound._read_run_rows

    async def counted(*args):  # type: ignore[no-untyped-def]
        reads[0] += 1
        return await real(*args)

    bound._read_run_rows = counted  # type: ignore[method-assign]
    assert "mcp:demo" not in await kernel.agent.run_toolboxes(context)  # opens the listener
    watch = bound._run_rows.watch
    assert watch.stamp() is not None
    assert "mcp:demo" not in await kernel.agent.run_toolboxes(context)
    assert reads[0] == 1  # the third run read nothing

    before = watch.generation
    async with opened() as elsewhere:  # a database object of its own, as another process
        await elsewhere.put("ada", demo)
    await _until(lambda: watch.generation != before)
    assert "mcp:demo" in await kernel.agent.run_toolboxes(context)
    assert reads[0] == 2

    before = watch.generation
    async with opened() as elsewhere:
        assert await elsewhere.remove("ada", "demo")
    await _until(lambda: watch.generation != before)
    assert "mcp:demo" not in await kernel.agent.run_toolboxes(context)


async def test_own_change_is_in_the_next_run_before_its_notification(store, demo, monkeypatch):
    kernel = plugin_kernel(nyla_toolbox_mcp, db=store.db, builtins=False)
    context = RunContext(user_id="ada")
    await kernel.agent.run_toolboxes(context)
    await kernel.agent.run_toolboxes(context)
    source = next(s for s in kernel.plugins.toolboxes.values() if isinstance(s, McpToolboxes))
    watch = source._store._run_rows.watch
    assert watch.stamp() is not None
    monkeypatch.setattr(watch, "notified", lambda note=None: None)  # notifications late
    await source._store.put("ada", demo)
    assert "mcp:demo" in await kernel.agent.run_toolboxes(context)


async def test_a_command_run_in_this_process_counts_before_its_notification(
    store, demo, monkeypatch
):
    """``nyla mcp remove`` run in a host's process writes through a database object of its
    own; the host's next run must not wait for the notification to drop the server."""
    kernel = plugin_kernel(nyla_toolbox_mcp, db=store.db, builtins=False)
    context = RunContext(user_id="ada")
    await store.put("ada", demo)
    await kernel.agent.run_toolboxes(context)
    assert "mcp:demo" in await kernel.agent.run_toolboxes(context)
    source = next(s for s in kernel.plugins.toolboxes.values() if isinstance(s, McpToolboxes))
    watch = source._store._run_rows.watch
    assert watch.stamp() is not None
    monkeypatch.setattr(watch, "notified", lambda note=None: None)  # notifications late
    async with opened() as command:  # what the CLI command opens
        assert await command.remove("ada", "demo")
    assert "mcp:demo" not in await kernel.agent.run_toolboxes(context)
