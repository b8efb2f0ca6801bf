"""``nyla_before_tool_call`` through pluggy: sync and async implementations, allow and deny,
several plugins, the first denial in hook order wins, tryfirst moves a policy to the front."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from nyla.agent.registry import ToolRegistry, before_call_hook
from nyla.hookspecs import hookimpl
from nyla.models.ai import ToolCall
from nyla.models.tools import Tool, ToolContext, ToolResult
from nyla.plugins import PluginHost


class AddArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int
    b: int


async def add(args: AddArgs, ctx: ToolContext) -> int:
    return args.a + args.b


class Audit:
    """Allows everything and records what it saw (sync or async)."""

    def __init__(self, asynchronous: bool) -> None:
        self.seen: list[str] = []

        def allow(tool: Any, arguments: dict, context: Any) -> None:
            self.seen.append(tool.name)

        async def allow_async(tool: Any, arguments: dict, context: Any) -> None:
            self.seen.append(tool.name)

        self.nyla_before_tool_call = hookimpl(allow_async if asynchronous else allow)


class Deny:
    """Denies every call with its own reason (sync or async)."""

    def __init__(self, reason: str, asynchronous: bool, **marks: Any) -> None:
        def deny(tool: Any, arguments: dict, context: Any) -> ToolResult:
            return ToolResult(success=False, error=reason)

        async def deny_async(tool: Any, arguments: dict, context: Any) -> ToolResult:
            return ToolResult(success=False, error=reason)

        self.nyla_before_tool_call = hookimpl(**marks)(deny_async if asynchronous else deny)


class Raises:
    @hookimpl
    async def nyla_before_tool_call(self, tool: Any, arguments: dict, context: Any) -> None:
        raise RuntimeError("policy store down")


async def run_with(*plugins: Any) -> ToolResult:
    host = PluginHost.from_plugins(plugins, names=[f"p{i}" for i in range(len(plugins))])
    hook = before_call_hook(host)
    registry = ToolRegistry(
        [Tool.from_model("add", "Add two integers.", AddArgs, add)], before_call=hook
    )
    call = ToolCall(id="c1", name="add", arguments='{"a": 2, "b": 3}')
    return (await registry.dispatch(call, ToolContext())).result


async def test_an_async_policy_returning_none_allows_the_call() -> None:
    audit = Audit(asynchronous=True)
    result = await run_with(audit)
    assert result.success and result.content == "5"
    assert audit.seen == ["add"]


async def test_sync_and_async_policies_that_allow_let_the_call_run() -> None:
    sync_audit, async_audit = Audit(asynchronous=False), Audit(asynchronous=True)
    result = await run_with(sync_audit, async_audit)
    assert result.success
    assert sync_audit.seen == async_audit.seen == ["add"]


async def test_an_async_denial_denies_and_every_policy_is_still_consulted() -> None:
    audit = Audit(asynchronous=True)
    result = await run_with(audit, Deny("not on weekends", asynchronous=True))
    assert not result.success
    assert result.error == "not on weekends" and result.error_details.code == "DENIED"
    assert audit.seen == ["add"]


async def test_a_sync_denial_denies_beside_async_allowing_policies() -> None:
    result = await run_with(Audit(asynchronous=True), Deny("no", asynchronous=False))
    assert result.error == "no"


async def test_the_first_denial_in_hook_order_wins() -> None:
    # pluggy calls the last registered implementation first
    first_registered = Deny("registered first", asynchronous=True)
    last_registered = Deny("registered last", asynchronous=False)
    result = await run_with(first_registered, last_registered)
    assert result.error == "registered last"


async def test_tryfirst_puts_a_policy_in_front() -> None:
    early = Deny("tryfirst policy", asynchronous=True, tryfirst=True)
    result = await run_with(early, Deny("plain policy", asynchronous=False))
    assert result.error == "tryfirst policy"


async def test_a_policy_that_raises_denies_and_says_why() -> None:
    audit = Audit(asynchronous=True)
    result = await run_with(audit, Raises())
    assert result.error_details.code == "DENIED"
    assert "policy store down" in result.error


class ToolOnly:
    """A policy that declares only the argument it needs (pluggy allows a subset)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl(trylast=True)
    def nyla_before_tool_call(self, tool: Any) -> ToolResult:
        self.seen.append(tool.name)
        return ToolResult(success=False, error=f"{tool.name} is closed")


class Wrapper:
    def __init__(self) -> None:
        self.wrapped: list[str] = []

    @hookimpl(wrapper=True)
    def nyla_before_tool_call(self, tool: Any, arguments: dict, context: Any):
        self.wrapped.append(tool.name)
        return (yield)


def hook_pair(*plugins: Any) -> tuple[Any, Any]:
    host = PluginHost.from_plugins(plugins, names=[f"p{i}" for i in range(len(plugins))])
    return host, before_call_hook(host)


async def test_the_direct_call_answers_what_pluggy_answers() -> None:
    only = ToolOnly()
    plugins = (Audit(asynchronous=False), Deny("a", asynchronous=False), only, Deny("b", False))
    host, direct = hook_pair(*plugins)
    tool = Tool.from_model("add", "Add two integers.", AddArgs, add)
    ours = direct(tool, {"a": 1, "b": 2}, ToolContext())
    theirs = host.pm.hook.nyla_before_tool_call(tool=tool, arguments={"a": 1, "b": 2}, context=None)
    assert [r.error for r in ours] == [r.error for r in theirs] == ["b", "a", "add is closed"]
    assert only.seen == ["add", "add"]
    assert (await run_with(only)).error == "add is closed"


async def test_a_wrapper_or_a_call_monitor_still_sees_every_call() -> None:
    wrapper = Wrapper()
    result = await run_with(wrapper, Deny("no", asynchronous=False))
    assert result.error == "no" and wrapper.wrapped == ["add"]

    host, _ = hook_pair(Deny("no", asynchronous=False))
    monitored: list[str] = []
    host.pm.add_hookcall_monitoring(lambda name, impls, kw: monitored.append(name), lambda *a: None)
    hook = before_call_hook(host)
    registry = ToolRegistry(
        [Tool.from_model("add", "Add two integers.", AddArgs, add)], before_call=hook
    )
    call = ToolCall(id="c1", name="add", arguments='{"a": 2, "b": 3}')
    assert (await registry.dispatch(call, ToolContext())).result.error == "no"
    assert monitored == ["nyla_before_tool_call"]
