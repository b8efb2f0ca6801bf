"""One tool definition per tool, shared by the runs that offer it (issue 32)."""

from __future__ import annotations

from nyla.agent.definitions import definition
from nyla.agent.registry import ToolRegistry
from nyla.models.tools import Tool


async def lookup(ctx: object, query: str) -> str:
    return query


def make_tool(name: str = "lookup") -> Tool:
    return Tool.from_function(lookup, name=name, description="Looks a thing up.")


def test_two_runs_offering_a_tool_share_its_definition():
    tool = make_tool()
    first, second = ToolRegistry([tool]), ToolRegistry([tool])
    [a], [b] = first.definitions(), second.definitions()
    assert a is b
    assert (a.name, a.description, a.parameters) == (tool.name, tool.description, tool.parameters)


def test_a_changed_tool_gets_a_new_definition():
    tool = make_tool()
    before = definition(tool)
    tool.description = "Looks two things up."
    after = definition(tool)
    assert after is not before and after.description == "Looks two things up."
    tool.parameters = {**tool.parameters, "required": []}
    assert definition(tool) is not after and definition(tool).parameters["required"] == []


def test_another_tool_of_the_same_name_is_its_own():
    one, other = make_tool(), make_tool()
    assert definition(one) is not definition(other)
