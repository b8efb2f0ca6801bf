"""Toolbox activation and the requestToolbox meta-tool; repair counters."""

from __future__ import annotations

from pydantic import BaseModel

from nyla.agent.repair import repair_counters
from nyla.agent.toolboxes import initial_toolboxes, open_session, request_toolbox_tool
from nyla.models.agent import AgentConfig, RunContext, ToolCallLog
from nyla.models.tools import Tool, Toolbox, ToolContext


class NoArgs(BaseModel):
    pass


async def noop(args: BaseModel, ctx: ToolContext) -> str:
    return "ok"


def box(tb_id: str, *names: str, **kw) -> Toolbox:
    return Toolbox(
        id=tb_id,
        tools=[Tool.from_model(n, n, NoArgs, noop) for n in names or (tb_id + "Tool",)],
        **kw,
    )


TOOLBOXES = {
    "core": box("core", default_active=True),
    "email": box("email", requires_connection="microsoft"),
    "jira": box("jira", requires_connection="jira"),
    "trustee": box("trustee", feature_code="trustee"),
    "workflow": box(
        "workflow", "readWorkflowGraph", "workflow_addNode", feature_code="graphicalEditor"
    ),
}


def test_activation_by_default_connection_feature_and_config():
    assert initial_toolboxes(TOOLBOXES, AgentConfig(), RunContext()) == ["core"]
    context = RunContext(
        connections=["microsoft"], feature_code="trustee", feature_instance_id="acme"
    )
    assert initial_toolboxes(TOOLBOXES, AgentConfig(), context) == ["core", "email", "trustee"]
    config = AgentConfig(initial_toolboxes=["jira"])
    assert initial_toolboxes(TOOLBOXES, config, RunContext()) == ["core", "jira"]
    assert open_session(TOOLBOXES, AgentConfig(tool_set="none"), RunContext()).active == []


def test_a_toolbox_can_require_any_of_several_services():
    mail = {"email": box("email", requires_connection=["msft", "google"])}
    assert mail["email"].connection_services == ("msft", "google")
    for services, active in (([], []), (["google"], ["email"]), (["msft", "google"], ["email"])):
        got = initial_toolboxes(mail, AgentConfig(), RunContext(connections=services))
        assert got == active, services
    assert initial_toolboxes(mail, AgentConfig(), RunContext(connections=["jira"])) == []


def test_request_toolbox_offers_only_inactive_ones_and_updates_the_same_list():
    session = open_session(TOOLBOXES, AgentConfig(), RunContext())
    tools = session.tools
    meta = next(t for t in tools if t.name == "requestToolbox")
    offered = meta.parameters["properties"]["toolboxId"]["enum"]
    assert offered == ["email", "jira", "trustee", "workflow"]
    assert meta.parameters["required"] == ["toolboxId", "reason"]
    result = session.request("jira", "ticket work")
    assert result.success and "jiraTool" in result.content
    assert session.tools is tools and "jiraTool" in [t.name for t in tools]
    meta = next(t for t in tools if t.name == "requestToolbox")
    assert "jira" not in meta.parameters["properties"]["toolboxId"]["enum"]
    assert session.request("nope").error_details.code == "INVALID_VALUE"
    assert session.requested == [{"toolboxId": "jira", "reason": "ticket work"}]


def test_exclude_action_tools_drops_method_action_tools():
    config = AgentConfig(exclude_action_tools=True, initial_toolboxes=["workflow"])
    names = [t.name for t in open_session(TOOLBOXES, config, RunContext()).tools]
    assert "readWorkflowGraph" in names and "workflow_addNode" not in names


def test_request_toolbox_tool_with_no_inactive_toolbox_is_still_valid():
    tool = request_toolbox_tool([])
    assert tool.parameters["properties"]["toolboxId"]["type"] == "string"


def log(round_: int, name: str, code: str | None = None) -> ToolCallLog:
    return ToolCallLog(
        round=round_,
        call_id="x",
        tool_name=name,
        arguments="{}",
        success=code is None,
        validation_failure_code=code,
    )


def test_repair_counters_follow_the_seed_definition():
    logs = [
        log(1, "queryTable", "FIELD_NOT_FOUND"),
        log(1, "queryTable"),  # same round: not a repair attempt
        log(2, "browseTable"),  # other tool
        log(2, "queryTable", "TYPE_MISMATCH"),  # attempt 1, failed again
        log(3, "queryTable"),  # attempt 2, success
        log(4, "queryTable"),  # repaired already: not an attempt
        log(4, "aggregateTable", "INVALID_AGGREGATE_TARGET"),  # never repaired
    ]
    assert repair_counters(logs) == {
        "validation_failures": 3,
        "repair_attempts": 2,
        "success_after_repair": 1,
    }
    assert repair_counters([]) == {
        "validation_failures": 0,
        "repair_attempts": 0,
        "success_after_repair": 0,
    }
