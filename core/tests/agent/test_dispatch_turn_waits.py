"""A turn's cheaper paths behave as the ones they replace: arguments read by json's scanner
alone give json.loads's values and the old path's errors; a call's read-only flag is the
registry's; the first batch's two checks under one wait of the run still end the turn the
moment the run is cancelled, before the rest is checked, and a cancel after that still
ends it at the same place (with a bare event or the run's scope)."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel, ConfigDict

from nyla.agent.cancel import CancelScope, RunCancelled
from nyla.agent.registry import ToolRegistry, _parse_arguments
from nyla.models.ai import ToolCall
from nyla.models.tools import Tool, ToolContext, ToolResult


class AddArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int
    b: int


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int = 0


async def add(args: AddArgs, ctx: ToolContext) -> int:
    return args.a + args.b


DEEP = '{"a":' * 50_000 + "1" + "}" * 50_000
TEXTS = [
    '{"a": 1, "b": 2}',
    '{"a":1,"b":2}',
    ' {"a": 1, "b": 2}',
    '{"a": 1, "b": 2} ',
    '{"a": 1, "b": 2}\n',
    '{"a": 1, "b": 2, "a": 5}',
    '{"a": 1, "b": 2}{"a": 1}',
    '{"a": 1, "b": 2} {}',
    '{"a": 1, "b": }',
    '{"a": 1 "b": 2}',
    "{'a': 1, 'b': 2}",
    '{"a": NaN, "b": 1}',
    '{"a": 1, "b": 2',
    "{}",
    "{",
    "}",
    "{}}",
    "[1, 2]",
    '"{}"',
    "",
    "   ",
    "null",
    DEEP,
]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
async def test_arguments_give_the_old_paths_values_and_errors(text: str) -> None:
    """Whatever the scanner reads, the check's answer is what parsing by ``_parse_arguments``
    (json.loads's errors) and validating gives (fails when the scanner's end is not checked:
    trailing text would pass)."""
    tool = Tool.from_model("add", "Add.", AddArgs, add)
    registry = ToolRegistry([tool])
    c = ToolCall(id="c1", name="add", arguments=text)
    checked = await registry._safe_check(c, ToolContext())
    old = _parse_arguments(tool, c)
    if isinstance(old, ToolResult):
        assert checked == old
        return
    try:
        expected = AddArgs.model_validate(old)
    except ValueError:
        assert isinstance(checked, ToolResult) and checked.error_details is not None
        assert checked.error_details.code in ("MISSING_FIELD", "INVALID_TYPE", "INVALID_VALUE")
        return
    assert isinstance(checked, tuple) and checked[1] == expected


async def test_nested_too_deeply_and_trailing_text_keep_their_errors() -> None:
    registry = ToolRegistry([Tool.from_model("add", "Add.", AddArgs, add)])
    deep = await registry.dispatch(ToolCall(id="d", name="add", arguments=DEEP), ToolContext())
    assert "nested too deeply" in (deep.result.error or "")
    extra = await registry.dispatch(
        ToolCall(id="e", name="add", arguments='{"a": 1, "b": 2}{"a": 1}'), ToolContext()
    )
    assert not extra.result.success and "Extra data at position 16" in (extra.result.error or "")


async def test_a_calls_read_only_flag_is_the_registrys() -> None:
    """Passed and refused calls, reads and writes: each result's flag is ``is_read_only``."""

    async def read(args: NoArgs, ctx: ToolContext) -> str:
        return "r"

    registry = ToolRegistry(
        [
            Tool.from_model("r", "r", NoArgs, read, read_only=True),
            Tool.from_model("w", "w", NoArgs, read),
        ]
    )
    calls = [
        ToolCall(id="1", name="r", arguments="{}"),
        ToolCall(id="2", name="r", arguments='{"x": "no"}'),
        ToolCall(id="3", name="nope", arguments="{}"),
        ToolCall(id="4", name="w", arguments="{}"),
        ToolCall(id="5", name="w", arguments="[]"),
        ToolCall(id="6", name="r", arguments='{"x": 1}'),
    ]
    done = [d async for batch in registry.execute(calls, lambda c: ToolContext()) for d in batch]
    assert [d.call.id for d in done] == ["1", "2", "3", "4", "5", "6"]
    assert [d.read_only for d in done] == [True, True, False, False, False, True]
    assert [d.read_only for d in done] == [registry.is_read_only(c) for c in calls]
    assert [d.result.success for d in done] == [True, False, False, True, False, True]


def _turn_tools(log: list[str], cancel: asyncio.Event, cancel_in: str):
    async def read(args: NoArgs, ctx: ToolContext) -> str:
        log.append(f"start {ctx.call_id}")
        if ctx.call_id == cancel_in:
            cancel.set()
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            log.append(f"cancelled {ctx.call_id}")
            raise
        return "r"

    def policy(tool, arguments, ctx):
        log.append(f"check {ctx.call_id}")
        return [None]

    return ToolRegistry(
        [
            Tool.from_model("r", "r", NoArgs, read, read_only=True),
            Tool.from_model("w", "w", NoArgs, read),
        ],
        before_call=policy,
    )


async def _play(cancel_in: str, scoped: bool) -> tuple[list[str], list[list[str]]]:
    cancel = asyncio.Event()
    log: list[str] = []
    registry = _turn_tools(log, cancel, cancel_in)
    scope = CancelScope(cancel) if scoped else None
    calls = [
        ToolCall(id="r1", name="r", arguments="{}"),
        ToolCall(id="r2", name="r", arguments='{"x": 1}'),
        ToolCall(id="r3", name="r", arguments='{"x": 2}'),
        ToolCall(id="w4", name="w", arguments="{}"),
    ]
    seen: list[list[str]] = []
    turn = registry.execute(
        calls, lambda c: ToolContext(call_id=c.id), scope or cancel, announce=True
    )
    with pytest.raises(RunCancelled):
        async with asyncio.timeout(5):
            async for batch in turn:
                seen.append([d.call.id for d in batch])
    for _ in range(5):
        await asyncio.sleep(0)
    if scope is not None:
        scope.close()
    return log, seen


@pytest.mark.parametrize("scoped", [True, False])
async def test_a_cancel_as_the_first_call_begins_ends_the_turn_before_the_rest_is_checked(
    scoped: bool,
) -> None:
    """The first read cancels the run as it begins (while the rest of its batch waits for
    its check): nothing more is checked or started, nothing is announced, the read is
    cancelled (fails when the rest's checks run in the same wait without asking)."""
    log, seen = await _play("r1", scoped)
    assert seen == []
    assert log == ["check r1", "start r1", "cancelled r1"]


@pytest.mark.parametrize("scoped", [True, False])
async def test_a_cancel_as_the_batch_begins_ends_the_turn_after_its_announcement(
    scoped: bool,
) -> None:
    """The third read cancels the run as it begins: the turn is announced (its TOOL_CALL
    events go out), the write is never checked nor started, the reads are cancelled."""
    log, seen = await _play("r3", scoped)
    assert seen == [[]]
    assert log[:6] == ["check r1", "start r1", "check r2", "check r3", "start r2", "start r3"]
    assert sorted(log[6:]) == ["cancelled r1", "cancelled r2", "cancelled r3"]


def test_safe_result_keeps_a_short_text_and_still_cleans_the_rest() -> None:
    """A short ASCII answer is kept as it is (no copy); a NUL, a lone surrogate, an
    over-long text or an unclean error are still cleaned (fails when the short way skips
    one of clean_text's checks)."""
    from nyla.agent.guard import MAX_RESULT_CHARS, safe_result

    short = ToolResult.ok("read 5 ok")
    assert safe_result(short) is short
    empty = ToolResult.ok("")
    assert safe_result(empty) is empty
    assert safe_result(ToolResult.ok("a\x00b")).content == "a\ufffdb"
    assert safe_result(ToolResult.ok("x" * (MAX_RESULT_CHARS + 5))).content == (
        "x" * MAX_RESULT_CHARS
    )
    assert safe_result(ToolResult.ok("é\ud800")).content == "é\ufffd"
    failed = safe_result(ToolResult.fail("bad\x00", "TOOL_ERROR"))
    assert failed.error == "bad\ufffd" and not failed.success
    with_data = safe_result(ToolResult.ok("ok", data={"k": "v\ud800"}))
    assert with_data.data == {"k": "v\ufffd"}
