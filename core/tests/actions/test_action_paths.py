"""One executor for every path: an action run outside an agent run (the host's REST route,
``kernel.run_action``) is held to a budget and asked of the plugins' before-tool-call policy
as an agent's call is; the agent path asks the policy once, with the same tool."""

from __future__ import annotations

from typing import Any

import pytest

from nyla.hookspecs import hookimpl
from nyla.models.agent import AgentConfig, EventType, RunContext
from nyla.models.ai import ChatRequest
from nyla.models.tools import ToolResult

pytestmark = pytest.mark.db

ANNA = RunContext(user_id="anna")


class Policy:
    """Denies a ``probe_note`` titled "secret"; records every call it is asked about."""

    def __init__(self) -> None:
        self.asked: list[tuple[Any, dict[str, Any], Any]] = []

    @hookimpl
    def nyla_before_tool_call(self, tool: Any, arguments: dict, context: Any) -> Any:
        self.asked.append((tool, dict(arguments), context))
        if tool.name == "probe_note" and arguments.get("title") == "secret":
            return ToolResult(success=False, error="secret notes need approval")
        return None


async def test_the_rest_path_asks_the_policy_hook_before_the_action(make_kernel, db, probe):
    policy = Policy()
    kernel = make_kernel(probe, policy, db=db)
    denied = await kernel.run_action("probe", "note", {"title": "secret"}, ANNA)
    assert not denied.success and denied.error_details.code == "DENIED"
    assert "need approval" in denied.error
    assert probe.calls == []  # the handler never ran
    allowed = await kernel.run_action("probe", "note", {"title": "open", "count": "2"}, ANNA)
    assert allowed.success and [c.count for c in probe.calls] == [2]
    tool, arguments, context = policy.asked[-1]
    assert tool is kernel.action_executor.tool("probe", "note")  # the tool the agent sees
    assert arguments == {"title": "open", "count": "2"} and context.run.user_id == "anna"


async def test_a_bad_call_is_refused_before_the_policy_is_asked(make_kernel, db, probe):
    policy = Policy()
    kernel = make_kernel(probe, policy, db=db)
    result = await kernel.run_action("probe", "note", {"count": 1}, ANNA)
    assert result.error_details.code == "MISSING_FIELD" and policy.asked == []


async def test_the_agent_path_asks_the_policy_once_per_call(
    scripted, make_kernel, db, probe, run_events, only
):
    policy = Policy()

    def script(request: ChatRequest, i: int) -> Any:
        if i == 0:
            return [("probe_note", {"title": "secret"}), ("probe_note", {"title": "fine"})]
        return "Done."

    kernel = make_kernel(scripted(script), probe, policy, db=db)
    events = await run_events(kernel.agent.run("Note.", AgentConfig(), ANNA))
    results = only(events, EventType.TOOL_RESULT)
    assert [r.data["success"] for r in results] == [False, True]
    assert results[0].data["errorDetails"]["code"] == "DENIED"
    notes = [a for a in policy.asked if a[0].name == "probe_note"]
    assert [a[1]["title"] for a in notes] == ["secret", "fine"]  # once each, not twice
    assert [c.title for c in probe.calls] == ["fine"]


async def test_a_spent_budget_refuses_the_action_before_it_runs(make_kernel, db, probe):
    kernel = make_kernel(probe, db=db)
    spent = await kernel.run_action("probe", "note", {"title": "t"}, ANNA, max_cost_chf=0)
    assert not spent.success and spent.error_details.code == "BUDGET_EXCEEDED"
    assert probe.calls == []
    capped = make_kernel(probe, db=db, settings={"action_max_cost_chf": 0})
    asked_more = await capped.run_action("probe", "note", {"title": "t"}, ANNA, max_cost_chf=5)
    assert asked_more.error_details.code == "BUDGET_EXCEEDED"  # the host's cap wins
    assert probe.calls == []
    assert (await kernel.run_action("probe", "note", {"title": "t"}, ANNA)).success


async def test_the_budget_reaches_the_model_call_of_an_action(scripted, make_kernel, db):
    provider = scripted(lambda request, i: "An answer.")
    kernel = make_kernel(provider, db=db)
    tiny = await kernel.run_action(
        "ai", "process", {"prompt": "Explain VAT. " * 200}, ANNA, max_cost_chf=1e-9
    )
    assert not tiny.success and tiny.error_details.code == "BUDGET_EXCEEDED"
    assert "budget" in tiny.error and provider.requests == []  # refused before the call
    ok = await kernel.run_action("ai", "process", {"prompt": "Explain VAT."}, ANNA)
    assert ok.success and ok.content == "An answer." and len(provider.requests) == 1


def test_a_cap_that_is_no_number_is_a_clear_error(make_kernel, probe):
    from nyla.errors import ConfigurationError

    kernel = make_kernel(probe, settings={"action_max_cost_chf": "lots"})
    with pytest.raises(ConfigurationError, match="action_max_cost_chf"):
        kernel.action_budget_chf()
