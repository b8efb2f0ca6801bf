"""Model access per mandate and user, enforced by the AI service on every call: agent
rounds, summaries, embeddings and direct calls on ``kernel.ai``, and a sub-agent a tool
starts — not only a run's ``allowed_providers``. A forbidden model is a ModelAccessDenied
naming the entry."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from nyla.agent.spec import RunSpec
from nyla.errors import ModelAccessDenied
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import AiCallRequest, ChatRequest, Message, OperationType, Role
from nyla.models.tools import Tool, Toolbox, ToolContext
from nyla.testing.helpers import ToolboxPlugin

pytestmark = pytest.mark.db


def vectors(texts: list[str]) -> list[list[float]]:
    return [[float(len(t)), 1.0, 0.0] for t in texts]


def ask(context: RunContext, model: str | None = None, operation=OperationType.AGENT):
    return AiCallRequest(
        operation=operation,
        messages=[Message(role=Role.USER, content="hi")],
        context=context,
        model=model,
    )


@pytest.fixture
def cloud(scripted):
    return scripted(lambda r, i: "from the cloud", id="cloud", quality_rank=90, embed_fn=vectors)


@pytest.fixture
def private(scripted):
    return scripted(lambda r, i: "from premises", id="private", quality_rank=10, embed_fn=vectors)


@pytest.fixture
def kernel(make_kernel, cloud, private, db):
    return make_kernel(cloud, private, db=db, builtins=False)


async def test_a_mandate_s_provider_list_binds_every_direct_call(kernel, cloud, private):
    await kernel.model_access.set_providers("mandate", "m1", ["private"])
    alice = RunContext(user_id="alice", mandate_id="m1")
    assert (await kernel.ai.call(ask(alice))).model == "private:model"
    summary = await kernel.ai.call(ask(alice, operation=OperationType.DATA_ANALYSE))
    assert summary.model == "private:model"
    with pytest.raises(ModelAccessDenied) as denied:
        await kernel.ai.call(ask(alice, model="cloud:model"))
    assert "model 'cloud:model' is forbidden" in str(denied.value)
    assert "provider 'cloud' is not among the allowed (private)" in str(denied.value)
    assert denied.value.rule == "mandate 'm1' (providers: private)"
    embedded = await kernel.ai.embed(["a text"], context=alice)
    assert embedded.model == "private:model"
    with pytest.raises(ModelAccessDenied, match="mandate 'm1'"):
        await kernel.ai.embed(["a text"], context=alice, model="cloud:model")
    with pytest.raises(ModelAccessDenied, match="mandate 'm1'"):
        async for _ in kernel.ai.stream(ask(alice, model="cloud:model")):
            pass
    assert cloud.requests == []
    # another mandate is not bound by m1's entry
    other = await kernel.ai.call(ask(RunContext(user_id="alice", mandate_id="m2")))
    assert other.model == "cloud:model"


async def test_a_model_list_binds_the_operations_it_names(kernel, make_kernel, scripted, db):
    chat_only = scripted(
        lambda r, i: "cheap", id="cheap", quality_rank=5, operations=[OperationType.AGENT]
    )
    kernel = make_kernel(*kernel.plugins.providers.values(), chat_only, db=db, builtins=False)
    await kernel.model_access.set("mandate", "m1", ["cheap:model"])
    alice = RunContext(user_id="alice", mandate_id="m1")
    assert (await kernel.ai.call(ask(alice))).model == "cheap:model"
    with pytest.raises(ModelAccessDenied, match=r"models: cheap:model"):
        await kernel.ai.call(ask(alice, model="cloud:model"))
    # the list names no embedding model: embeddings are left to the provider lists
    assert (await kernel.ai.embed(["x"], context=alice)).model == "cloud:model"
    await kernel.model_access.set("mandate", "m1", ["cheap:model", "private:model"])
    assert (await kernel.ai.embed(["x"], context=alice)).model == "private:model"


async def test_the_user_s_and_the_mandate_s_entries_both_bind(kernel):
    await kernel.model_access.set_providers("mandate", "m1", ["private"])
    await kernel.model_access.set_providers("user", "alice", ["cloud"])
    with pytest.raises(ModelAccessDenied) as denied:
        await kernel.ai.call(ask(RunContext(user_id="alice", mandate_id="m1")))
    message = str(denied.value)
    assert "no model for operation 'agent' is allowed" in message
    assert "mandate 'm1' (providers: private) and user 'alice' (providers: cloud)" in message
    await kernel.model_access.set_providers("user", "alice", [])
    answer = await kernel.ai.call(ask(RunContext(user_id="alice", mandate_id="m1")))
    assert answer.model == "private:model"


class NoArgs(BaseModel):
    pass


async def test_a_sub_agent_under_a_restricted_mandate_cannot_reach_a_forbidden_model(
    make_kernel, scripted, db
):
    """A tool of the run starts a sub-agent that names the forbidden model itself (as a
    data agent given a model would): it ends in an error naming the rule, the cloud never
    hears of it, and the run goes on within its mandate's providers."""
    outcomes: list[dict[str, Any]] = []
    kernel_ref: list[Any] = []

    async def delegate(args: NoArgs, ctx: ToolContext) -> str:
        for model in ("cloud:model", None):
            spec = RunSpec(
                "sub-question",
                config=AgentConfig(stream=False, max_rounds=2, model=model),
                context=ctx.run,
                parent_run_id=ctx.run_id,
                services=ctx.services,
            )
            events = [e async for e in kernel_ref[0].agent.loop(spec)]
            trace = await kernel_ref[0].agent.trace(events[-1].data["runId"])
            outcomes.append({"status": events[-1].data["status"], "error": trace.error or ""})
        return "delegated"

    def parent(request: ChatRequest, index: int) -> Any:
        if any(m.role is Role.TOOL for m in request.messages) or "sub-question" in str(
            [m.text for m in request.messages]
        ):
            return "done"
        return [("delegate", {})]

    cloud = scripted(parent, id="cloud", quality_rank=90)
    private = scripted(parent, id="private", quality_rank=10)
    box = Toolbox(
        id="sub",
        default_active=True,
        tools=[Tool.from_model("delegate", "Ask a sub agent.", NoArgs, delegate)],
    )
    kernel = make_kernel(cloud, private, ToolboxPlugin(box), db=db, builtins=False)
    kernel_ref.append(kernel)
    await kernel.model_access.set_providers("mandate", "m1", ["private"])
    context = RunContext(user_id="alice", mandate_id="m1")
    events = [e async for e in kernel.agent.run("q", AgentConfig(stream=False), context)]
    assert events[-1].data["status"] == "completed"
    forced, chosen = outcomes
    assert forced["status"] == "error"
    assert "ModelAccessDenied" in forced["error"]
    assert "mandate 'm1' (providers: private)" in forced["error"]
    assert chosen["status"] == "completed"
    assert cloud.requests == []
    assert len(private.requests) >= 3  # the run's two rounds and the second sub-agent's
