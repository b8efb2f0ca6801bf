"""A tool call's arguments are parsed once: the AI service's check keeps the object it parsed
and the agent's dispatch takes it (:mod:`nyla.ai.tool_arguments`). What the agent gets must be
what the call's own text says, and no other call's object."""

from __future__ import annotations

from pydantic import BaseModel

from nyla.agent.registry import ToolRegistry
from nyla.ai import tool_arguments
from nyla.ai.route import invalid_tool_arguments
from nyla.models.ai import ToolCall
from nyla.models.tools import Tool, ToolContext


class SendArgs(BaseModel):
    to: str
    n: int = 1


def send_tool(seen: list[SendArgs]) -> Tool:
    async def send(args: SendArgs, ctx: ToolContext) -> str:
        seen.append(args)
        return "sent"

    return Tool.from_model("send", "Send a note.", SendArgs, send, read_only=True)


async def test_the_agent_gets_the_text_it_dispatches_not_the_one_checked():
    # the service checks the model's text (a placeholder), the agent dispatches the restored one
    checked = ToolCall(id="c1", name="send", arguments='{"to": "[EMAIL_1]"}')
    assert invalid_tool_arguments([checked]) == []
    restored = ToolCall(id="c1", name="send", arguments='{"to": "ada@example.org"}')
    seen: list[SendArgs] = []
    result = await ToolRegistry([send_tool(seen)]).dispatch(restored, ToolContext())
    assert result.result.success
    assert [a.to for a in seen] == ["ada@example.org"]


async def test_a_parsed_object_is_handed_out_once_and_to_one_call():
    text = '{"to": "ada@example.org", "n": 1}'
    calls = [ToolCall(id=f"c{i}", name="send", arguments=text) for i in range(2)]
    assert invalid_tool_arguments(calls) == []
    hooked: list[int] = []

    def policy(tool, arguments, ctx):  # a hook that changes the dict it was given
        hooked.append(arguments["n"])
        arguments["n"] = 99
        return [None]

    seen: list[SendArgs] = []
    registry = ToolRegistry([send_tool(seen)], before_call=policy)
    results = [d async for batch in registry.execute(calls, lambda c: ToolContext()) for d in batch]
    assert [d.result.success for d in results] == [True, True]
    assert hooked == [1, 1]  # the second call did not get the first one's (changed) object
    assert [a.n for a in seen] == [1, 1]
    assert tool_arguments.take_parsed(text) is None  # nothing left behind


async def test_wrong_arguments_are_not_handed_over_and_still_refused():
    calls = [
        ToolCall(id="a", name="send", arguments="[1, 2]"),
        ToolCall(id="b", name="send", arguments='{"to": '),
        ToolCall(id="c", name="send", arguments='{"to": 5}'),
    ]
    assert [e.id for e in invalid_tool_arguments(calls)] == ["a", "b"]
    registry = ToolRegistry([send_tool([])])
    codes = [(await registry.dispatch(c, ToolContext())).result.error_details.code for c in calls]
    assert codes == ["INVALID_JSON", "INVALID_JSON", "INVALID_TYPE"]
