"""Tool dispatch: validation errors come back as repairable results, never exceptions;
read-only calls run concurrently, writes alone in the model's order."""

from __future__ import annotations

import asyncio
import contextvars
import json

import pytest
from pydantic import BaseModel, ConfigDict

from nyla.agent.batches import plan_batches
from nyla.agent.cancel import RunCancelled
from nyla.agent.registry import EXCERPT_CHARS, ToolRegistry
from nyla.models.ai import ToolCall
from nyla.models.tools import Tool, ToolContext, ToolResult


class AddArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int
    b: int


async def add(args: AddArgs, ctx: ToolContext) -> int:
    return args.a + args.b


def add_tool(**kw) -> Tool:
    return Tool.from_model("add", "Add two integers.", AddArgs, add, **kw)


def call(name: str, args: str, cid: str = "c1") -> ToolCall:
    return ToolCall(id=cid, name=name, arguments=args)


async def dispatch(registry: ToolRegistry, c: ToolCall):
    return (await registry.dispatch(c, ToolContext())).result


async def test_valid_call_returns_the_handler_value():
    result = await dispatch(ToolRegistry([add_tool()]), call("add", '{"a": 2, "b": 3}'))
    assert result.success and result.content == "5"


async def test_unparseable_json_is_reported_with_schema_and_a_bounded_excerpt():
    garbage = '{"a": 1, "b": ' + "x" * 5000
    result = await dispatch(ToolRegistry([add_tool()]), call("add", garbage))
    assert not result.success
    assert result.error_details.code == "INVALID_JSON"
    assert '"properties"' in result.error_details.hint  # the schema goes back
    assert len(result.error) < EXCERPT_CHARS + 200  # only an excerpt is echoed
    assert "more characters" in result.error


async def test_non_object_json_is_not_defaulted_to_empty_arguments():
    result = await dispatch(ToolRegistry([add_tool()]), call("add", "[1, 2]"))
    assert result.error_details.code == "INVALID_JSON"


async def test_wrong_type_missing_and_unknown_fields_name_the_field():
    registry = ToolRegistry([add_tool()])
    wrong = await dispatch(registry, call("add", '{"a": "two", "b": 3}'))
    assert (wrong.error_details.code, wrong.error_details.field) == ("INVALID_TYPE", "a")
    missing = await dispatch(registry, call("add", '{"a": 1}'))
    assert (missing.error_details.code, missing.error_details.field) == ("MISSING_FIELD", "b")
    extra = await dispatch(registry, call("add", '{"a": 1, "b": 2, "c": 3}'))
    assert (extra.error_details.code, extra.error_details.field) == ("UNKNOWN_FIELD", "c")
    assert "a, b" in extra.error_details.suggestion


async def test_unknown_tool_lists_the_available_ones():
    result = await dispatch(ToolRegistry([add_tool()]), call("multiply", "{}"))
    assert result.error_details.code == "UNKNOWN_TOOL"
    assert "add" in result.error_details.suggestion


async def test_handler_exception_and_timeout_become_error_results():
    async def boom(args: BaseModel, ctx: ToolContext) -> None:
        raise RuntimeError("disk on fire")

    never = asyncio.Event()

    async def hang(args: BaseModel, ctx: ToolContext) -> None:
        await never.wait()

    class NoArgs(BaseModel):
        pass

    registry = ToolRegistry(
        [
            Tool.from_model("boom", "fails", NoArgs, boom),
            Tool.from_model("hang", "hangs", NoArgs, hang, timeout_s=0.01),
        ]
    )
    failed = await dispatch(registry, call("boom", "{}"))
    assert failed.error_details.code == "TOOL_ERROR" and "disk on fire" in failed.error
    timed_out = await dispatch(registry, call("hang", "{}"))
    assert timed_out.error_details.code == "TIMEOUT"


async def test_the_same_call_again_and_again_is_detected():
    registry = ToolRegistry([add_tool()])
    results = [await dispatch(registry, call("add", '{"b": 2, "a": 1}')) for _ in range(3)]
    assert [r.success for r in results] == [True, True, False]
    assert results[2].error_details.code == "REPEATED_CALL"
    other = await dispatch(registry, call("add", '{"a": 1, "b": 3}'))
    assert other.success


async def test_policy_hook_denial_reaches_the_model():
    def deny(tool, arguments, context):
        return [None, ToolResult(success=False, error="not on weekends")]

    result = await dispatch(
        ToolRegistry([add_tool()], before_call=deny), call("add", '{"a":1,"b":1}')
    )
    assert result.error_details.code == "DENIED" and result.error == "not on weekends"


def test_batches_keep_writes_alone_and_in_order():
    calls = [call(n, "{}", n) for n in ["r1", "r2", "w1", "r3", "w2", "w3", "r4"]]
    batches = plan_batches(calls, lambda c: c.name.startswith("r"))
    assert [[c.name for c in b] for b in batches] == [
        ["r1", "r2"],
        ["w1"],
        ["r3"],
        ["w2"],
        ["w3"],
        ["r4"],
    ]


async def test_reads_run_concurrently_and_a_write_is_a_barrier():
    """r1 and r2 can only pass their barrier together (concurrently); the write must see
    both reads finished and the later reads not started; one failing read loses nothing."""
    first = asyncio.Barrier(2)
    second = asyncio.Barrier(2)
    log: list[str] = []

    class NoArgs(BaseModel):
        pass

    def reader(name: str, barrier: asyncio.Barrier, fail: bool = False):
        async def handler(args: BaseModel, ctx: ToolContext) -> str:
            log.append(f"start {name}")
            await asyncio.wait_for(barrier.wait(), 5)  # deadlocks (fails) if run serially
            log.append(f"end {name}")
            if fail:
                raise ValueError(f"{name} broke")
            return name

        return Tool.from_model(name, name, NoArgs, handler, read_only=True)

    async def write(args: BaseModel, ctx: ToolContext) -> str:
        log.append("write")
        return "written"

    tools = [
        reader("r1", first),
        reader("r2", first, fail=True),
        Tool.from_model("w", "w", NoArgs, write),
        reader("r3", second),
        reader("r4", second),
    ]
    registry = ToolRegistry(tools)
    calls = [call(n, "{}", f"id-{n}") for n in ["r1", "r2", "w", "r3", "r4"]]
    results = []
    async for batch in registry.execute(calls, lambda c: ToolContext(call_id=c.id)):
        results.extend(batch)
    assert [d.call.id for d in results] == ["id-r1", "id-r2", "id-w", "id-r3", "id-r4"]
    assert [d.result.success for d in results] == [True, False, True, True, True]
    assert results[0].result.content == "r1"
    write_at = log.index("write")
    assert {"end r1", "end r2"} <= set(log[:write_at])
    assert not any("r3" in e or "r4" in e for e in log[:write_at])
    assert json.loads(results[1].result.model_dump_json())["success"] is False


class _NoArgs(BaseModel):
    pass


async def test_the_next_batch_is_checked_while_the_current_one_runs():
    """The write's policy check runs while the reads are still in flight; the write itself
    starts only after both reads ended."""
    log: list[str] = []

    async def read(args: BaseModel, ctx: ToolContext) -> str:
        log.append(f"start {ctx.call_id}")
        await asyncio.sleep(0.01)
        log.append(f"end {ctx.call_id}")
        return "r"

    async def write(args: BaseModel, ctx: ToolContext) -> str:
        log.append("write")
        return "w"

    def policy(tool, arguments, ctx):
        log.append(f"check {tool.name}")
        return [None]

    tools = [
        Tool.from_model("r", "r", _NoArgs, read, read_only=True),
        Tool.from_model("w", "w", _NoArgs, write),
    ]
    registry = ToolRegistry(tools, before_call=policy)
    calls = [call("r", "{}", "r1"), call("r", "{}", "r2"), call("w", "{}", "w1")]
    batches = []
    async for batch in registry.execute(calls, lambda c: ToolContext(call_id=c.id)):
        batches.append([d.call.id for d in batch])
    assert batches == [["r1", "r2"], ["w1"]]
    # the write was checked before the reads ended, and ran after them
    assert log.index("check w") < log.index("end r1")
    assert log.index("write") > max(log.index("end r1"), log.index("end r2"))


async def test_the_next_batch_runs_while_the_finished_one_is_handed_out():
    """When the reads' results reach the caller, the write has already started; a caller
    that stops reading cancels what is still running (nothing is left behind)."""
    write_started = asyncio.Event()
    write_cancelled = asyncio.Event()

    async def read(args: BaseModel, ctx: ToolContext) -> str:
        return "r"

    async def write(args: BaseModel, ctx: ToolContext) -> str:
        write_started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            write_cancelled.set()
            raise
        return "w"

    tools = [
        Tool.from_model("r", "r", _NoArgs, read, read_only=True),
        Tool.from_model("w", "w", _NoArgs, write),
    ]
    registry = ToolRegistry(tools)
    turn = registry.execute([call("r", "{}", "r1"), call("w", "{}", "w1")], lambda c: ToolContext())
    first = await anext(turn)
    assert [d.result.content for d in first] == ["r"]
    assert write_started.is_set()  # started before the reads were handed out
    await turn.aclose()
    await asyncio.wait_for(write_cancelled.wait(), 5)


async def test_the_first_call_runs_while_the_rest_of_its_batch_is_checked():
    """The turn's first call starts once it has passed its check; the other reads of its
    batch are checked (in the model's order) while it runs, each before its own start."""
    log: list[str] = []

    async def read(args: BaseModel, ctx: ToolContext) -> str:
        log.append(f"start {ctx.call_id}")
        await asyncio.sleep(0.01)
        return "r"

    def policy(tool, arguments, ctx):
        log.append(f"check {ctx.call_id}")
        return [None]

    registry = ToolRegistry(
        [Tool.from_model("r", "r", _NoArgs, read, read_only=True)], before_call=policy
    )
    calls = [call("r", "{}", "r1"), call("r", '{"x": 1}', "r2"), call("r", '{"x": 2}', "r3")]
    batches = [b async for b in registry.execute(calls, lambda c: ToolContext(call_id=c.id))]
    assert [[d.result.content for d in b] for b in batches] == [["r", "r", "r"]]
    assert log.index("start r1") < log.index("check r2") < log.index("check r3")
    for cid in ("r1", "r2", "r3"):
        assert log.index(f"check {cid}") < log.index(f"start {cid}")


async def test_the_loop_resumes_in_the_iteration_after_the_last_tool_ends():
    """The end of a batch is reported from inside the last tool's task: the waiting loop
    resumes in the very next event-loop iteration, not one later (a done callback would
    take an iteration of its own)."""
    seen: dict[str, bool] = {}

    async def write(args: BaseModel, ctx: ToolContext) -> str:
        await asyncio.sleep(0.01)
        loop = asyncio.get_running_loop()
        # runs one iteration after the tool ends, then marks the iteration after that
        loop.call_soon(lambda: loop.call_soon(lambda: seen.setdefault("two", True)))
        return "w"

    registry = ToolRegistry([Tool.from_model("w", "w", _NoArgs, write)])
    async for _batch in registry.execute([call("w", "{}", "w1")], lambda c: ToolContext()):
        seen.setdefault("resumed", "two" not in seen)
    assert seen["resumed"] is True


async def test_the_next_batch_starts_in_the_runs_context_not_the_tools():
    """The read whose end starts the write changed a context variable; the write still sees
    the run's value (it starts in the waiting task's context)."""
    var: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="run")
    seen = []

    async def read(args: BaseModel, ctx: ToolContext) -> str:
        await asyncio.sleep(0.01)
        var.set("read")
        return "r"

    async def write(args: BaseModel, ctx: ToolContext) -> str:
        seen.append(var.get())
        return "w"

    tools = [
        Tool.from_model("r", "r", _NoArgs, read, read_only=True),
        Tool.from_model("w", "w", _NoArgs, write),
    ]
    registry = ToolRegistry(tools)
    calls = [call("r", "{}", "r1"), call("w", "{}", "w1")]
    batches = [b async for b in registry.execute(calls, lambda c: ToolContext())]
    assert [[d.result.content for d in b] for b in batches] == [["r"], ["w"]]
    assert seen == ["run"]


async def test_a_read_past_its_deadline_releases_the_write_and_is_left_behind():
    """The write waits for a stuck read only until the read's deadline: the read is answered
    TIMEOUT and cancelled, the write runs, nothing waits for the stuck handler."""
    log: list[str] = []
    read_cancelled = asyncio.Event()

    async def stuck(args: BaseModel, ctx: ToolContext) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            read_cancelled.set()
            raise
        return "never"

    async def write(args: BaseModel, ctx: ToolContext) -> str:
        log.append("write")
        return "w"

    tools = [
        Tool.from_model("r", "r", _NoArgs, stuck, read_only=True, timeout_s=0.05),
        Tool.from_model("w", "w", _NoArgs, write),
    ]
    registry = ToolRegistry(tools)
    results = []
    turn = registry.execute([call("r", "{}", "r1"), call("w", "{}", "w1")], lambda c: ToolContext())
    async with asyncio.timeout(5):
        async for batch in turn:
            results.extend(batch)
    assert [d.call.id for d in results] == ["r1", "w1"]
    assert results[0].result.error_details.code == "TIMEOUT"
    assert results[1].result.content == "w" and log == ["write"]
    await asyncio.wait_for(read_cancelled.wait(), 5)


async def test_a_cancelled_run_never_starts_the_next_batch():
    """The run is cancelled while its reads are in flight: the reads are cancelled and the
    write after them never starts."""
    cancel = asyncio.Event()
    log: list[str] = []

    async def read(args: BaseModel, ctx: ToolContext) -> str:
        log.append("read")
        cancel.set()
        await asyncio.sleep(30)
        return "r"

    async def write(args: BaseModel, ctx: ToolContext) -> str:
        log.append("write")
        return "w"

    tools = [
        Tool.from_model("r", "r", _NoArgs, read, read_only=True),
        Tool.from_model("w", "w", _NoArgs, write),
    ]
    registry = ToolRegistry(tools)
    turn = registry.execute(
        [call("r", "{}", "r1"), call("w", "{}", "w1")], lambda c: ToolContext(), cancel
    )
    with pytest.raises(RunCancelled):
        async with asyncio.timeout(5):
            async for _ in turn:
                pass
    for _ in range(5):
        await asyncio.sleep(0)
    assert log == ["read"]


async def test_a_refused_write_does_not_stop_the_reads_before_it():
    """A check failing for a later batch is that call's result; earlier reads still run."""

    async def read(args: BaseModel, ctx: ToolContext) -> str:
        await asyncio.sleep(0.01)
        return "r"

    tools = [Tool.from_model("r", "r", _NoArgs, read, read_only=True)]
    registry = ToolRegistry(tools)
    results = []
    calls = [call("r", "{}", "r1"), call("nope", "{}", "x1"), call("r", '{"bad": 1}', "r2")]
    async for batch in registry.execute(calls, lambda c: ToolContext()):
        results.extend(batch)
    assert [d.call.id for d in results] == ["r1", "x1", "r2"]
    assert results[0].result.success
    assert results[1].result.error_details.code == "UNKNOWN_TOOL"
    assert results[2].duration_ms >= 0


def test_repeat_keys_ignore_key_order_and_keep_types_apart() -> None:
    from nyla.agent.registry import repeat_key

    def key(arguments):
        return repeat_key("t", arguments)

    assert key({"a": 1, "b": "x"}) == key({"b": "x", "a": 1})
    assert len({key({"a": 1}), key({"a": 1.0}), key({"a": True})}) == 3
    assert key({"a": None}) != key({"a": "None"})
    nested = {"a": [1, {"b": 2}], "c": 1}
    assert key(nested) == key({"c": 1, "a": [1, {"b": 2}]})
    assert key(nested) != key({"a": [1, {"b": 3}], "c": 1})
    # the tool is part of the key; a flat key is never a nested one's twin
    assert repeat_key("t", {"a": 1}) != repeat_key("u", {"a": 1})
    assert key({}) != key({"a": []}) and len({key({}), key({"a": 1}), key({"a": [1]})}) == 3
    assert key({"a": "x"}) != ("t", '{"a":"x"}') and len(key({"a": "x"})) == 4
