"""Round and workflow memory are scoped like chunks (issue 12): the same user with the same
workflow id in another mandate or feature instance sees none of it, hints included."""

from __future__ import annotations

import pytest

from .conftest import ctx

pytestmark = pytest.mark.db


async def _remember_in(kernel, context, marker: str) -> None:
    k = kernel.knowledge
    await k.record_round(
        run_id=f"r-{marker}",
        round=1,
        context=context,
        file_refs=[f"file:{marker}"],
        tool_results=[{"tool": "readFile", "content": f"payroll figures {marker}"}],
        decisions=[f"payroll decision {marker}"],
    )
    await k.memory.remember("client", {"name": f"client {marker}"}, context=context)


async def test_same_user_same_workflow_other_mandate_sees_nothing(kernel):
    m0 = ctx("u1", "m0", workflow_id="wf")
    m1 = ctx("u1", "m1", workflow_id="wf")
    await _remember_in(kernel, m0, "m0-secret")
    kernel.knowledge.settings.cross_workflow_hints = True

    block = await kernel.knowledge.build_agent_context("payroll decision", m1)
    assert "m0-secret" not in block
    assert await kernel.knowledge.memory.workflow_entities(m1) == []
    # another workflow of the same user in m1: no hints from m0 either
    other_wf = ctx("u1", "m1", workflow_id="wf-2")
    assert "m0-secret" not in await kernel.knowledge.build_agent_context("payroll", other_wf)

    # the writer's own scope still sees everything
    mine = await kernel.knowledge.build_agent_context("payroll decision", m0)
    assert "file:m0-secret" in mine and "payroll decision m0-secret" in mine
    assert [e.value for e in await kernel.knowledge.memory.workflow_entities(m0)] == [
        {"name": "client m0-secret"}
    ]


async def test_workflow_values_of_two_mandates_do_not_overwrite_each_other(kernel):
    m0 = ctx("u1", "m0", workflow_id="wf")
    m1 = ctx("u1", "m1", workflow_id="wf")
    await kernel.knowledge.memory.remember("client", "zero", context=m0)
    await kernel.knowledge.memory.remember("client", "one", context=m1)
    assert [e.value for e in await kernel.knowledge.memory.workflow_entities(m0)] == ["zero"]
    assert [e.value for e in await kernel.knowledge.memory.workflow_entities(m1)] == ["one"]


async def test_feature_instances_are_separate_memory_scopes(kernel):
    a = ctx("u1", "m0", instance="fi-a", workflow_id="wf")
    b = ctx("u1", "m0", instance="fi-b", workflow_id="wf")
    await _remember_in(kernel, a, "fi-a-only")
    kernel.knowledge.settings.cross_workflow_hints = True
    assert "fi-a-only" not in await kernel.knowledge.build_agent_context("payroll decision", b)


async def test_a_round_with_nul_and_lone_surrogates_is_still_remembered(kernel):
    """Tool results carry whatever a vendor or a model produced; the round's memory row must
    be written anyway (PostgreSQL text/jsonb take neither NUL nor lone surrogates)."""
    here = ctx("u1", "m0", workflow_id="wf-hostile")
    await kernel.knowledge.record_round(
        run_id="r-hostile",
        round=1,
        context=here,
        file_refs=["file:\x00odd"],
        tool_results=[
            {"tool": "readFile", "content": "ledger\x00 total \ud800 invoices", "k\x00": 1}
        ],
        decisions=["checked the ledger\udfff totals"],
    )
    block = await kernel.knowledge.build_agent_context("ledger totals invoices", here)
    assert "checked the ledger" in block
    assert "\x00" not in block and "\ud800" not in block
