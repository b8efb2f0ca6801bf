"""``POST /api/automation2/actions/{method}/{action}`` runs through the same executor as an
agent's call: under a budget (402 when spent), asked of the policy hook (403 on a denial),
and its result documents bound to the caller's own conversation only."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from nyla.sdk import ToolContext, ToolResult, hookimpl
from nyla.sdk.actions import Action, ActionParams, ActionResult, Method

pytestmark = pytest.mark.db


class MakeParams(ActionParams):
    """Parameters of ``docs.make``."""

    name: str = Field(description="The file's name.")


class Plugins:
    """A policy that denies neutralizing anything "classified", and ``docs.make``, which
    saves a file and names it as its document."""

    def __init__(self) -> None:
        self.made: list[str] = []

    @hookimpl
    def nyla_before_tool_call(self, tool: Any, arguments: dict, context: Any) -> Any:
        if tool.name == "context_neutralizeData" and "classified" in str(arguments.get("text")):
            return ToolResult(success=False, error="classified text stays where it is")
        return None

    async def make(self, params: MakeParams, ctx: ToolContext) -> ActionResult:
        item = await ctx.services.files.save(params.name, b"made", ctx.run, dedupe=False)
        self.made.append(item.id)
        return ActionResult(text=f"made {params.name}", documents=[item.id])

    @hookimpl
    def nyla_methods(self) -> list[Method]:
        make = Action(name="make", description="Make a file.", params=MakeParams, handler=self.make)
        return [Method(name="docs", description="Documents.", actions=[make])]


@pytest.fixture
def plugins() -> Plugins:
    return Plugins()


@pytest.fixture
def kernel(db, make_kernel, provider, memory_plugin, plugins, tmp_path):
    return make_kernel(
        provider,
        memory_plugin,
        plugins,
        db=db,
        settings={"knowledge": {"embedding_model": "scripted:model"}, "data_dir": tmp_path},
    )


AI = "/api/automation2/actions/ai/process"


async def test_a_spent_or_too_small_budget_is_402(client, token_for, provider):
    alice = await token_for("alice")
    spent = await client.post(f"{AI}?maxCostChf=0", json={"prompt": "Hi."}, headers=alice)
    assert spent.status_code == 402 and "budget" in spent.json()["detail"]
    tiny = await client.post(
        f"{AI}?maxCostChf=0.000000001", json={"prompt": "Explain. " * 100}, headers=alice
    )
    assert tiny.status_code == 402 and "budget" in tiny.json()["detail"]
    assert provider.requests == []  # no model was called
    negative = await client.post(f"{AI}?maxCostChf=-1", json={"prompt": "Hi."}, headers=alice)
    assert negative.status_code == 422
    ok = await client.post(AI, json={"prompt": "Hi."}, headers=alice)
    assert ok.status_code == 200 and ok.json()["success"] is True


async def test_the_policy_hook_denies_a_rest_call_with_403(client, token_for):
    alice = await token_for("alice")
    url = "/api/automation2/actions/context/neutralizeData"
    denied = await client.post(url, json={"text": "the classified plan"}, headers=alice)
    assert denied.status_code == 403 and "stays where it is" in denied.json()["detail"]
    fine = await client.post(url, json={"text": "an open plan"}, headers=alice)
    assert fine.status_code == 200 and fine.json()["success"] is True


async def test_documents_bind_to_the_callers_conversation_only(client, token_for, state, plugins):
    from nyla.sdk import RunContext

    alice, bob = await token_for("alice"), await token_for("bob")
    store = state.kernel.files.workflows
    await store.create_conversation(
        RunContext(user_id="alice", mandate_id="m1"), "A", workflow_id="c-alice"
    )
    url = "/api/automation2/actions/docs/make"
    made = await client.post(f"{url}?workflowId=c-alice", json={"name": "a.txt"}, headers=alice)
    assert made.status_code == 200, made.text
    [document] = made.json()["data"]["documents"]
    assert document["documentRef"].startswith("docItem:") and document["name"] == "a.txt"
    assert (document["roundNumber"], document["taskNumber"], document["actionNumber"]) == (1, 1, 1)
    stored = await store.load("c-alice", RunContext(user_id="alice", mandate_id="m1"))
    assert [d.id for d in stored.documents()] == [document["documentId"]]
    refused = await client.post(f"{url}?workflowId=c-alice", json={"name": "b.txt"}, headers=bob)
    assert refused.status_code == 403 and "may change" in refused.json()["detail"]
    assert len(plugins.made) == 1  # bob's action never ran
    after = await store.load("c-alice", RunContext(user_id="alice", mandate_id="m1"))
    assert len(after.documents()) == 1
