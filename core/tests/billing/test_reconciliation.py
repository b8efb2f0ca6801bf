"""Reconciliation: the ledger rows of a run add up to the cost the run reports (its trace's
``costChf``, what AGENT_SUMMARY says), for runs with summaries, an AI tool (a chat call and an
embedding it charges to the run) and a sub-agent started by a tool; every model call of the
run and of what it started is one row, billed to the top-level run."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from nyla.agent.spec import RunSpec
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import (
    AiCallRequest,
    ChatRequest,
    Message,
    OperationType,
    Role,
    ToolCall,
)
from nyla.models.tools import Tool, Toolbox, ToolContext
from nyla.testing.helpers import ToolboxPlugin

pytestmark = pytest.mark.db

PRICE = 50.0  # CHF per million tokens: costs well above rounding, budgets never reached


class PartArgs(BaseModel):
    part: int


class NoArgs(BaseModel):
    pass


def vectors(texts: list[str]) -> list[list[float]]:
    return [[float(len(t)), 1.0, 0.0] for t in texts]


def tool_turns(request: ChatRequest) -> int:
    return sum(m.role is Role.TOOL for m in request.messages)


async def big(args: PartArgs, ctx: ToolContext) -> str:
    return f"chunk {args.part}: " + "lorem ipsum " * 300


async def analyse(args: NoArgs, ctx: ToolContext) -> str:
    """An AI tool: a chat call and an embedding in the run's context, charged to the run."""
    ai = ctx.services.ai
    answer = await ai.call(
        AiCallRequest(
            operation=OperationType.DATA_ANALYSE,
            messages=[Message(role=Role.USER, content="analyse this")],
            context=ctx.run,
        )
    )
    ctx.charge(answer.cost_chf)
    embedded = await ai.embed(["one text", "another"], context=ctx.run, model="scripted:model")
    ctx.charge(embedded.cost_chf)
    return answer.content


ANALYSE = Tool.from_model("analyse", "Analyse.", NoArgs, analyse, read_only=True)


def toolbox(kernel_ref: list[Any]) -> Toolbox:
    async def delegate(args: NoArgs, ctx: ToolContext) -> str:
        """A sub-agent on the kernel's loop, inheriting the run's context (as the feature
        data agent does); its cost is charged to the run."""
        spec = RunSpec(
            "sub-question",
            config=AgentConfig(stream=False, max_rounds=3),
            context=ctx.run,
            tools=[ANALYSE],
            parent_run_id=ctx.run_id,
            services=ctx.services,
            system_prompt="You are a sub agent.",
        )
        events = [e async for e in kernel_ref[0].agent.loop(spec)]
        ctx.charge(events[-1].data["costChf"])
        return events[-2].data.get("text") or "sub answer"

    return Toolbox(
        id="recon",
        default_active=True,
        tools=[
            Tool.from_model("big", "Read a big part.", PartArgs, big, read_only=True),
            ANALYSE,
            Tool.from_model("delegate", "Ask a sub agent.", NoArgs, delegate, read_only=True),
        ],
    )


def script(request: ChatRequest, index: int) -> Any:
    system = request.messages[0].text if request.messages else ""
    if request.operation is OperationType.DATA_ANALYSE:
        return "Earlier: read chunks, analysed."
    if "sub agent" in system:
        return [("analyse", {})] if tool_turns(request) == 0 else "sub answer"
    prompt = next(m.text for m in request.messages if m.role is Role.USER)
    turns = tool_turns(request)
    if prompt.startswith("summaries") and turns < 9:
        return [ToolCall(id=f"c{turns}", name="big", arguments=f'{{"part": {turns}}}')]
    if prompt.startswith("tool") and turns < 2:
        return [("analyse", {})]
    if prompt.startswith("delegate") and turns < 1:
        return [("delegate", {})]
    return "done"


async def test_ledger_rows_add_up_to_each_run_s_reported_cost(scripted, make_kernel, db):
    provider = scripted(
        script, price_input=PRICE, price_output=PRICE, context_window=6000, embed_fn=vectors
    )
    kernel_ref: list[Any] = []
    # no built-in toolboxes: their definitions alone would fill this small window
    kernel = make_kernel(provider, ToolboxPlugin(toolbox(kernel_ref)), db=db, builtins=False)
    kernel_ref.append(kernel)
    figures = []
    for prompt in ("summaries please", "tool please", "delegate please", "plain"):
        before = len(provider.requests)
        context = RunContext(user_id="alice", mandate_id="m1", workflow_id=None)
        events = [e async for e in kernel.agent.run(prompt, AgentConfig(stream=False), context)]
        summary = events[-1].data
        assert summary["status"] == "completed", summary
        run_id = summary["runId"]
        trace = await kernel.agent.trace(run_id)
        rows = await kernel.billing.run_entries(run_id)
        chats = [r for r in rows if r.operation != "embedding"]
        # every chat call of the run and of what it started is one row of this run
        assert len(chats) == len(provider.requests) - before
        assert {(r.user_id, r.mandate_id) for r in rows} == {("alice", "m1")}
        total = sum(r.cost_chf for r in rows)
        assert total == pytest.approx(trace.cost_chf, rel=1e-9, abs=1e-12)
        assert total == pytest.approx(summary["costChf"], rel=1e-9, abs=1e-12)
        figures.append((prompt, len(rows), sorted({r.operation for r in rows}), total))
    assert all({"agent", "embedding"} <= set(ops) for _, _, ops, _ in figures)
    assert all("dataAnalyse" in ops for _, _, ops, _ in figures[:3])
    print("\nreconciliation (run, ledger rows, operations, ledger CHF = reported CHF):")
    for prompt, count, ops, total in figures:
        print(f"  {prompt:18} {count:3} rows  {','.join(ops):32} {total:.8f}")
