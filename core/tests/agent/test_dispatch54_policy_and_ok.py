"""The session-54 cuts of dispatch behave as before: ``ToolResult.ok`` of a text, assembled
without validation, is the validated result slot for slot (fields in order, the same fields
set, no extra, no private); the registry calls the policy hook itself and awaits nothing when
every policy allowed, and its answers still deny, fail closed and are consulted once, as
through ``check_policy``."""

from __future__ import annotations

from typing import Any

import pytest

from nyla.agent.policy import check_policy
from nyla.agent.registry import ToolRegistry
from nyla.models.ai import ToolCall
from nyla.models.tools import Tool, ToolContext, ToolResult, _validate_result


def test_ok_of_a_text_is_the_validated_result_slot_for_slot() -> None:
    class Text(str):
        pass

    for content, data in (("read 1 ok", None), ("", [1, {"a": 2}]), ("é\x00", object())):
        fast = ToolResult.ok(content, data)
        slow = _validate_result({"success": True, "content": content, "data": data})
        assert type(fast) is ToolResult and fast == slow
        assert list(fast.__dict__.items()) == list(slow.__dict__.items())
        assert fast.model_fields_set == slow.model_fields_set == {"success", "content", "data"}
        assert fast.__pydantic_extra__ is None and fast.__pydantic_private__ is None
        assert slow.__pydantic_extra__ is None and slow.__pydantic_private__ is None
        assert fast.model_copy(update={"content": "x"}) == slow.model_copy(update={"content": "x"})
    # a str subclass is not a str to the fast path: validated, as before
    sub = ToolResult.ok(Text("t"))
    assert sub == _validate_result({"success": True, "content": Text("t"), "data": None})
    assert ToolResult.ok() == ToolResult(success=True, content="", data=None)


def _registry(before_call: Any) -> ToolRegistry:
    tool = Tool.from_function(_echo_tool, name="echo", description="echo", read_only=True)
    return ToolRegistry([tool], before_call=before_call)


async def _echo_tool(ctx: ToolContext, x: int) -> str:
    return f"ran {x}"


async def _dispatch(before_call: Any) -> ToolResult:
    registry = _registry(before_call)
    call = ToolCall(id="c1", name="echo", arguments='{"x": 1}')
    return (await registry.dispatch(call, ToolContext())).result


class _Untruthy:
    def __bool__(self) -> bool:
        raise RuntimeError("no truth")


@pytest.mark.parametrize(
    "answer",
    [
        [],
        None,
        [None],
        ["not today"],
        [ToolResult.fail("blocked", "POLICY")],
        [ToolResult(success=False, error="plain")],
        "raise",
        "untruthy",
        "async-allow",
        "async-deny",
    ],
)
async def test_the_registry_decides_as_check_policy_does(answer: Any) -> None:
    calls: list[str] = []

    def before_call(tool: Tool, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        calls.append(tool.name)
        if answer == "raise":
            raise RuntimeError("policy store down")
        if answer == "untruthy":
            return _Untruthy()
        if answer in ("async-allow", "async-deny"):

            async def decide() -> Any:
                return None if answer == "async-allow" else "async no"

            return [decide()]
        return answer

    result = await _dispatch(before_call)
    assert calls == ["echo"]  # consulted once
    tool = _registry(None).get("echo")
    assert tool is not None
    expected = await check_policy(before_call, tool, {"x": 1}, ToolContext())
    if expected is None:
        assert result.success and result.content == "ran 1"
    else:
        assert not result.success
        assert result.model_dump() == expected.model_dump()
        assert result.error_details is not None
    if answer in ("raise", "untruthy"):
        assert result.error == "the policy check for echo failed: " + (
            "policy store down" if answer == "raise" else "no truth"
        )
        assert result.error_details is not None and result.error_details.code == "DENIED"
