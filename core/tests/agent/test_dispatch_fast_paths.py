"""The per-call fast paths of dispatch behave as the paths they replace: a result or tool
message validated by the model's own validator equals the constructed one and refuses the
same input; arguments are refused with the same codes and a model's own ``model_validate``
still runs; a batch whose runs all ended goes on without a gate, its ``then`` called (and its
failure raised) as before; the blocker flag never hides a blocker."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from nyla.agent import loop_watch
from nyla.agent.conversation import tool_message
from nyla.agent.guard import ToolRun, await_tool_runs
from nyla.agent.policy import before_call_hook
from nyla.agent.registry import ToolRegistry
from nyla.hookspecs import hookimpl
from nyla.models.ai import Message, Role, ToolCall
from nyla.models.tools import Tool, ToolContext, ToolErrorDetails, ToolResult
from nyla.plugins import PluginHost


def test_ok_and_fail_equal_the_constructed_results():
    for content, data in (("read 5 ok", None), ("", {"a": [1, 2]}), ("x", object)):
        fast = ToolResult.ok(content, data)
        slow = ToolResult(success=True, content=content, data=data)
        assert fast == slow and type(fast) is ToolResult
        assert fast.model_fields_set == slow.model_fields_set
        assert fast.model_dump(exclude_unset=True) == slow.model_dump(exclude_unset=True)
    fast = ToolResult.fail("bad", "INVALID_JSON", suggestion="fix it")
    slow = ToolResult(
        success=False,
        error="bad",
        error_details=ToolErrorDetails(
            code="INVALID_JSON", field=None, suggestion="fix it", hint=None
        ),
    )
    assert fast == slow and fast.model_fields_set == slow.model_fields_set
    assert fast.error_details is not None and slow.error_details is not None
    assert fast.error_details.model_fields_set == slow.error_details.model_fields_set
    assert fast.model_dump_json() == slow.model_dump_json()


def test_ok_and_fail_still_refuse_wrong_input():
    with pytest.raises(ValidationError):
        ToolResult.ok(123)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ToolResult.ok(["not", "text"])  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ToolResult.fail("bad", 7)  # type: ignore[arg-type]


def test_a_subclass_of_tool_result_is_constructed():
    made: list[dict[str, object]] = []

    class Counted(ToolResult):
        def __init__(self, **values: object) -> None:
            super().__init__(**values)
            made.append(values)

    result = Counted.ok("x")
    assert type(result) is Counted and made == [{"success": True, "content": "x", "data": None}]
    failed = Counted.fail("bad", "TOOL_ERROR")
    assert type(failed) is Counted and len(made) == 2
    assert isinstance(made[1]["error_details"], ToolErrorDetails)


def test_tool_message_equals_the_constructed_message():
    call = ToolCall(id="read-1", name="read", arguments='{"round": 1}')
    fast = tool_message(call, "read 1 ok")
    slow = Message(role=Role.TOOL, content="read 1 ok", tool_call_id="read-1", name="read")
    assert fast == slow and type(fast) is Message
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.tool_calls == [] and fast.tool_calls is not slow.tool_calls
    assert fast.model_dump_json() == slow.model_dump_json()
    with pytest.raises(ValidationError):
        tool_message(call, 42)  # type: ignore[arg-type]


async def test_a_batch_that_ended_calls_then_and_lets_its_batch_begin():
    async def tool(args: object, ctx: object) -> str:
        return "ok"

    runs = [ToolRun(tool, None, None, 5.0, "quick") for _ in range(2)]
    await asyncio.sleep(0)
    assert all(r.finished is not None for r in runs)
    begun: list[ToolRun] = []

    def then() -> None:
        begun.append(ToolRun(tool, None, None, 5.0, "next"))

    await await_tool_runs(runs, then)
    # ``then`` started the next run, and it began before the waiter went on
    assert len(begun) == 1 and begun[0].finished is not None

    def broken() -> None:
        raise LookupError("then failed")

    with pytest.raises(LookupError, match="then failed"):
        await await_tool_runs(runs, broken)


async def test_a_batch_with_a_run_still_going_waits_for_it():
    release = asyncio.Event()

    async def slow(args: object, ctx: object) -> str:
        await release.wait()
        return "late"

    async def quick(args: object, ctx: object) -> str:
        return "ok"

    runs = [ToolRun(quick, None, None, 5.0, "quick"), ToolRun(slow, None, None, 5.0, "slow")]
    called: list[str] = []
    waiter = asyncio.ensure_future(await_tool_runs(runs, lambda: called.append("then")))
    await asyncio.sleep(0.01)
    assert not waiter.done() and called == []
    release.set()
    await asyncio.wait_for(waiter, 5.0)
    assert called == ["then"] and runs[1].task.result() == "late"


def test_the_blocker_flag_never_hides_a_blocker():
    def handler(args: object, ctx: object) -> None:
        return None

    loop_watch.forget_blockers()
    try:
        assert not loop_watch.has_blocked(handler)
        loop_watch._mark_blocker(handler)
        assert loop_watch.has_blocked(handler)
        assert not loop_watch.has_blocked(lambda a, c: None)
    finally:
        loop_watch.forget_blockers()
    assert not loop_watch.has_blocked(handler)


async def test_arguments_are_validated_by_the_models_own_validation():
    seen: list[Any] = []

    class Plain(BaseModel):
        model_config = ConfigDict(extra="forbid")
        round: int

    class Custom(BaseModel):
        n: int

        @classmethod
        def model_validate(cls, obj: Any, **kwargs: Any) -> Custom:  # type: ignore[override]
            seen.append(obj)
            return super().model_validate({"n": int(obj["n"]) * 2}, **kwargs)

    async def handler(args: BaseModel, ctx: ToolContext) -> str:
        return repr(args)

    registry = ToolRegistry(
        [
            Tool.from_model("plain", "d", Plain, handler),
            Tool.from_model("custom", "d", Custom, handler),
        ]
    )
    ctx = ToolContext()
    ok = await registry.dispatch(ToolCall(id="1", name="plain", arguments='{"round": 3}'), ctx)
    assert ok.result.success and ok.result.content == "Plain(round=3)"
    wrong = await registry.dispatch(ToolCall(id="2", name="plain", arguments='{"round": "x"}'), ctx)
    assert wrong.result.error_details is not None
    assert wrong.result.error_details.code == "INVALID_TYPE"
    extra = await registry.dispatch(
        ToolCall(id="3", name="plain", arguments='{"round": 1, "more": 2}'), ctx
    )
    assert extra.result.error_details is not None
    assert extra.result.error_details.code == "UNKNOWN_FIELD"
    # a model with a model_validate of its own is validated by it
    custom = await registry.dispatch(ToolCall(id="4", name="custom", arguments='{"n": "4"}'), ctx)
    assert custom.result.content == "Custom(n=8)" and seen == [{"n": "4"}]


async def test_a_released_watch_leaves_the_watchdog():
    async def tool() -> str:
        return "ok"

    task = asyncio.get_running_loop().create_task(tool())
    watched = loop_watch.watch(task, "quick", tool)
    assert watched is not None and watched.blocking is None
    dog = loop_watch._watchdogs[asyncio.get_running_loop()]
    assert dog.tasks[task] is watched
    await task
    watched.release()
    assert task not in dog.tasks
    watched.release()  # (twice: nothing left to release)
    assert task not in dog.tasks


def test_policies_get_their_arguments_by_name_in_any_order():
    seen: list[tuple[str, Any, Any, Any]] = []

    class InOrder:
        @hookimpl
        def nyla_before_tool_call(self, tool: Any, arguments: Any, context: Any) -> None:
            seen.append(("in order", tool, arguments, context))

    class Shuffled:
        @hookimpl
        def nyla_before_tool_call(self, context: Any, tool: Any, arguments: Any) -> ToolResult:
            seen.append(("shuffled", tool, arguments, context))
            return ToolResult(success=False, error="no")

    host = PluginHost.from_plugins([InOrder(), Shuffled()], names=["a", "b"])
    hook = before_call_hook(host)
    assert hook is not None
    answers = hook("T", {"k": 1}, "C")
    assert [a.error for a in answers] == ["no"]
    assert sorted(seen) == [("in order", "T", {"k": 1}, "C"), ("shuffled", "T", {"k": 1}, "C")]
    theirs = host.pm.hook.nyla_before_tool_call(tool="T", arguments={"k": 1}, context="C")
    assert [a.error for a in theirs] == ["no"]


async def test_a_function_tool_gets_its_parameters_from_any_arguments_model():
    """A function tool's handler passes the validated parameters (defaults included); an
    arguments object of another type (a subclass with more fields) passes only the
    function's own."""
    seen: list[dict[str, Any]] = []

    async def look(ctx: ToolContext, query: str, limit: int = 3) -> str:
        seen.append({"query": query, "limit": limit})
        return "ok"

    tool = Tool.from_function(look)
    registry = ToolRegistry([tool])
    done = await registry.dispatch(
        ToolCall(id="1", name="look", arguments='{"query": "a"}'), ToolContext()
    )
    assert done.result.content == "ok" and seen == [{"query": "a", "limit": 3}]

    class More(tool.args_model):  # type: ignore[misc,valid-type]
        extra_field: int = 7

    assert await tool.handler(More(query="b", limit=1), ToolContext()) == "ok"
    assert seen[-1] == {"query": "b", "limit": 1}


def test_a_calls_tool_context_equals_the_copy_of_the_runs_own():
    """Each call's context is its own object, equal to ``copied`` of the run's base with the
    call's fields, every field set; a tool changing its context changes no other's."""
    from types import SimpleNamespace

    from nyla.agent.run import AgentRun
    from nyla.models.agent import RunContext
    from nyla.models.base import copied

    calls = [ToolCall(id=f"c{i}", name="t", arguments="{}") for i in (1, 2)]
    spent: list[float] = []
    run = SimpleNamespace(
        _tool_base=None,
        spec=SimpleNamespace(services=None, toolboxes=None, workflow=None),
        context=RunContext(user_id="u"),
        run_id="r",
        session=None,
        config=SimpleNamespace(model="m", max_rounds=5),
        round=2,
        _call_numbers={id(calls[0]): 1, id(calls[1]): 2},
        remaining_budget=1.5,
        charge=spent.append,
    )
    first, second = (AgentRun.tool_context(run, c) for c in calls)  # type: ignore[arg-type]
    want = copied(
        ToolContext.model_construct(
            run=run.context,
            services=None,
            run_id="r",
            action_number=1,
            neutralization=None,
            model="m",
            toolboxes=None,
            workflow=None,
        ),
        round=2,
        task_number=2,
        call_id="c2",
        remaining_rounds=3,
        remaining_budget_chf=1.5,
        on_charge=run.charge,
    )
    assert second == want and second.__pydantic_fields_set__ == set(ToolContext.model_fields)
    assert (first.task_number, first.call_id, second.task_number) == (1, "c1", 2)
    first.round = 9
    assert second.round == 2 and first.__pydantic_fields_set__ is not second.__pydantic_fields_set__
    second.charge(0.5)
    assert spent == [0.5]
