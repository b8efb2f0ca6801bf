"""The billing ledger and its preflight against the real database: every AI operation is a
row per user and mandate in CHF; a blocked mandate, a monthly limit (mandate or user) and a
prepaid mandate's credit refuse the call before the provider hears of it, naming the rule;
two spenders at once never pass a limit only one of them fits."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nyla.billing.service import BillingService
from nyla.errors import SpendingRefused
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import AiCallRequest, Message, OperationType, Role

pytestmark = pytest.mark.db

#: CHF per million tokens: 0.001 CHF a token, so a call's estimate is about 0.1 CHF
PRICE = 1000.0


def ask(context: RunContext, text: str = "hi") -> AiCallRequest:
    return AiCallRequest(
        operation=OperationType.AGENT,
        messages=[Message(role=Role.USER, content=text)],
        context=context,
        max_output_tokens=100,
    )


def vectors(texts: list[str]) -> list[list[float]]:
    return [[float(len(t)), 1.0, 0.0] for t in texts]


@pytest.fixture
def provider(scripted):
    return scripted(
        lambda request, i: "ok", price_input=PRICE, price_output=PRICE, embed_fn=vectors
    )


@pytest.fixture
def kernel(make_kernel, provider, db):
    return make_kernel(provider, db=db, builtins=False)


async def test_every_operation_is_a_row_per_user_and_mandate(kernel):
    alice = RunContext(user_id="alice", mandate_id="m1", workflow_id="wf-1")
    answer = await kernel.ai.call(ask(alice))
    vectors_ = await kernel.ai.embed(["one", "two"], context=alice)
    bob = RunContext(user_id="bob", mandate_id="m2")
    other = await kernel.ai.call(ask(bob, "hello there"))
    await kernel.billing.flush()
    report = await kernel.billing.report(mandate_id="m1")
    by_operation = {line.operation: line for line in report.lines}
    assert set(by_operation) == {"agent", "embedding"}
    assert by_operation["agent"].cost_chf == pytest.approx(answer.cost_chf)
    assert by_operation["agent"].user_id == "alice"
    assert by_operation["embedding"].cost_chf == pytest.approx(vectors_.cost_chf)
    assert report.calls_chf == pytest.approx(answer.cost_chf + vectors_.cost_chf)
    assert answer.cost_chf > 0 and vectors_.cost_chf > 0
    everyone = await kernel.billing.report()
    assert everyone.calls_chf == pytest.approx(answer.cost_chf + vectors_.cost_chf + other.cost_chf)
    async with kernel.db.session() as s:
        from sqlalchemy import select

        from nyla.billing.tables import LedgerEntry

        rows = (await s.scalars(select(LedgerEntry).where(LedgerEntry.user_id == "alice"))).all()
    assert {r.workflow_id for r in rows} == {"wf-1"}
    assert all(r.run_id is None and r.model == "scripted:model" for r in rows)


async def test_a_blocked_mandate_is_refused_before_the_provider_is_called(kernel, provider):
    await kernel.billing.update_policy("mandate", "m1", spending_allowed=False)
    with pytest.raises(SpendingRefused, match="mandate 'm1' may not spend") as refused:
        await kernel.ai.call(ask(RunContext(user_id="alice", mandate_id="m1")))
    assert refused.value.rule == "mandate 'm1' may not spend"
    with pytest.raises(SpendingRefused):
        await kernel.ai.embed(["x"], context=RunContext(user_id="alice", mandate_id="m1"))
    assert provider.requests == []
    # another mandate still spends
    await kernel.ai.call(ask(RunContext(user_id="alice", mandate_id="m2")))
    assert len(provider.requests) == 1


async def test_the_monthly_mandate_limit_refuses_the_call_that_would_pass_it(kernel, provider):
    await kernel.billing.update_policy("mandate", "m1", monthly_limit_chf=0.5)
    alice = RunContext(user_id="alice", mandate_id="m1")
    spent, answered = 0.0, 0
    with pytest.raises(SpendingRefused, match=r"monthly limit 0\.50 CHF") as refused:
        for _ in range(50):
            spent += (await kernel.ai.call(ask(alice))).cost_chf
            answered += 1
    assert "mandate 'm1'" in refused.value.rule
    assert answered == len(provider.requests) >= 2
    await kernel.billing.flush()
    report = await kernel.billing.report(mandate_id="m1")
    assert report.calls_chf == pytest.approx(spent)
    assert report.calls_chf <= 0.5
    assert report.held_chf == 0.0  # every call's hold went with its row


async def test_a_user_limit_binds_the_user_in_every_mandate(kernel):
    await kernel.billing.update_policy("user", "alice", monthly_limit_chf=0.05)
    with pytest.raises(SpendingRefused, match="user 'alice': monthly limit"):
        await kernel.ai.call(ask(RunContext(user_id="alice", mandate_id="m1")))
    await kernel.ai.call(ask(RunContext(user_id="bob", mandate_id="m1")))


async def test_a_prepaid_mandate_spends_only_its_credit(kernel):
    await kernel.billing.update_policy("mandate", "m1", prepaid=True)
    alice = RunContext(user_id="alice", mandate_id="m1")
    with pytest.raises(SpendingRefused, match=r"prepaid credit 0\.0000 CHF"):
        await kernel.ai.call(ask(alice))
    balance = await kernel.billing.add_credit("m1", 1.0, note="invoice 7")
    assert balance == pytest.approx(1.0)
    answer = await kernel.ai.call(ask(alice))
    report = await kernel.billing.report(mandate_id="m1")
    assert report.credit_chf == pytest.approx(1.0 - answer.cost_chf)


async def test_two_spenders_at_once_cannot_both_pass_a_limit_only_one_fits(db, make_kernel):
    """Two billing services (two processes) hold for two runs at the same instant under a
    limit that fits one: the advisory lock serializes them and one is refused."""
    first, second = BillingService(db), BillingService(db)
    await first.update_policy("mandate", "m1", monthly_limit_chf=1.0)
    for attempt in range(3):
        runs = [
            RunContext(user_id=u, mandate_id="m1", run_id=f"r{attempt}-{u}") for u in ("a", "b")
        ]
        outcomes = await asyncio.gather(
            first.admit(runs[0], "agent", 0.6, 0.6),
            second.admit(runs[1], "agent", 0.6, 0.6),
            return_exceptions=True,
        )
        refused = [o for o in outcomes if isinstance(o, SpendingRefused)]
        assert len(refused) == 1, outcomes
        assert "monthly limit 1.00 CHF" in str(refused[0])
        for service, run in zip((first, second), runs, strict=True):
            await service.close_run(run.run_id)  # releases the hold for the next attempt
    report = await first.report(mandate_id="m1", snapshot=False)
    assert report.held_chf == 0.0


async def test_two_runs_at_once_under_a_limit_that_fits_one(make_kernel, db):
    """End to end: two agent runs with a budget of 6 CHF each (a round's estimate is over
    1 CHF at these prices) under a mandate limit of 7 CHF; the second starts while the first
    is with the model: its round is refused and it ends budgetExceeded with the rule named
    (its short progress report still fits what is left), the first completes, and the ledger
    stays within the limit."""
    from nyla.ai.scripted import ScriptedProvider

    started, release = asyncio.Event(), asyncio.Event()

    class Held(ScriptedProvider):
        async def chat(self, request):
            if not started.is_set():  # the first run's first call waits for the second run
                started.set()
                await release.wait()
            return await super().chat(request)

    provider = Held(lambda r, i: "ok", price_input=PRICE, price_output=PRICE)
    kernel = make_kernel(provider, db=db, builtins=False)
    await kernel.billing.update_policy("mandate", "m1", monthly_limit_chf=7.0)
    config = AgentConfig(max_cost_chf=6.0, stream=False, max_rounds=2)

    async def run(user: str) -> list:
        context = RunContext(user_id=user, mandate_id="m1")
        return [e async for e in kernel.agent.run("hi", config, context)]

    first = asyncio.ensure_future(run("a"))
    try:
        await asyncio.wait_for(started.wait(), 30)
        second = await asyncio.wait_for(run("b"), 30)
    finally:
        release.set()
    first_events = await asyncio.wait_for(first, 30)
    assert first_events[-1].data["status"] == "completed"
    assert second[-1].data["status"] == "budgetExceeded"
    trace = await kernel.agent.trace(second[-1].data["runId"])
    assert "spending refused: mandate 'm1': monthly limit 7.00 CHF" in trace.error
    report = await kernel.billing.report(mandate_id="m1")
    assert 0 < report.calls_chf <= 7.0
    assert report.held_chf == 0.0


async def test_a_refused_run_ends_structured_not_crashed(kernel, provider):
    await kernel.billing.update_policy("mandate", "m1", spending_allowed=False)
    context = RunContext(user_id="alice", mandate_id="m1")
    events = [e async for e in kernel.agent.run("hi", AgentConfig(stream=False), context)]
    final, summary = events[-2], events[-1]
    assert final.type.value == "FINAL" and summary.type.value == "AGENT_SUMMARY"
    assert summary.data["status"] == "budgetExceeded"
    trace = await kernel.agent.trace(summary.data["runId"])
    assert trace.error.startswith("spending refused: mandate 'm1' may not spend")
    assert provider.requests == []


class CountingDatabase:
    """The database as billing and model access see it, counting their transactions."""

    def __init__(self, db) -> None:
        self.db, self.sessions = db, 0

    def session(self):
        self.sessions += 1
        return self.db.session()

    @property
    def engine(self) -> Any:  # the ledger's rows go through the driver: a transaction too
        outer = self

        class Engine:
            def begin(self) -> Any:
                outer.sessions += 1
                return outer.db.engine.begin()

        return Engine()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


async def test_billing_adds_no_database_round_trip_per_round(make_kernel, scripted, db):
    """Under a monthly limit, a 12-round run makes as many billing and model access
    transactions as a 2-round one: the policies and rules read once, one hold, and the
    ledger rows written with the run's end. A call in the run's context after its end (the
    round memory) is billed on its own, marked ``afterRun``, not in the run's rows."""

    def script(request, index):
        turns = sum(m.role is Role.TOOL for m in request.messages)
        return [("requestToolbox", {"toolboxId": f"none{turns}"})] if turns < rounds - 1 else "ok"

    counts = []
    for rounds in (2, 12):
        kernel = make_kernel(scripted(script, embed_fn=vectors), db=db)
        await kernel.billing.update_policy("mandate", "m1", monthly_limit_chf=100.0)
        billing_db = kernel.billing.db = CountingDatabase(db)
        access_db = kernel.model_access.db = CountingDatabase(db)
        context = RunContext(user_id="alice", mandate_id="m1")
        config = AgentConfig(stream=False, max_rounds=rounds, max_cost_chf=10.0)
        events = [e async for e in kernel.agent.run("go", config, context)]
        assert events[-1].data["status"] == "completed"
        assert events[-1].data["rounds"] == rounds
        counts.append((billing_db.sessions, access_db.sessions))
        rows = await kernel.billing.run_entries(events[-1].data["runId"])
        assert len([r for r in rows if r.operation == "agent"]) == rounds
        trace = await kernel.agent.trace(events[-1].data["runId"])
        assert sum(r.cost_chf for r in rows) == pytest.approx(trace.cost_chf)
        await kernel.billing.flush()
        async with db.session() as s:
            from sqlalchemy import select

            from nyla.billing.tables import LedgerEntry

            loose = (await s.scalars(select(LedgerEntry).where(LedgerEntry.run_id.is_(None)))).all()
        assert trace.run_id in {r.detail.get("afterRun") for r in loose}
    assert counts[0] == counts[1], counts
    # the policies, the run's hold, its rows with the hold's release, and the hold of the
    # round memory's embedding made after the run (a call of its own)
    assert counts[0][0] <= 4


async def test_require_credit_makes_every_mandate_prepaid(make_kernel, provider, db):
    kernel = make_kernel(
        provider, db=db, builtins=False, settings={"billing": {"require_credit": True}}
    )
    with pytest.raises(SpendingRefused, match="mandate 'm7': prepaid credit"):
        await kernel.ai.call(ask(RunContext(user_id="alice", mandate_id="m7")))
    await kernel.billing.add_credit("m7", 1.0)
    await kernel.ai.call(ask(RunContext(user_id="alice", mandate_id="m7")))
    await kernel.ai.call(ask(RunContext(user_id="alice")))  # no mandate: nothing to draw on


async def test_calls_of_one_run_at_once_cannot_both_pass_what_it_holds(make_kernel, db):
    """A second call of a run while its first is still with the model (two tools of a round,
    say), under a limit that fits one call's estimate: what the first was admitted with is
    set aside in the run's hold, so the second is refused."""
    from nyla.ai.scripted import ScriptedProvider

    started, release = asyncio.Event(), asyncio.Event()

    class Slow(ScriptedProvider):
        async def chat(self, request):
            started.set()
            await release.wait()
            return await super().chat(request)

    provider = Slow(lambda r, i: "ok", price_input=PRICE, price_output=PRICE)
    kernel = make_kernel(provider, db=db, builtins=False)
    await kernel.billing.update_policy("mandate", "m1", monthly_limit_chf=0.15)
    run = RunContext(user_id="alice", mandate_id="m1", run_id="run-at-once")
    first = asyncio.ensure_future(kernel.ai.call(ask(run)))
    await asyncio.wait_for(started.wait(), 10)
    try:  # (bounded: a second call let through would wait for the model with the first)
        with pytest.raises(SpendingRefused, match="monthly limit 0"):
            await asyncio.wait_for(kernel.ai.call(ask(run)), 10)
    finally:
        release.set()
    await asyncio.wait_for(first, 10)
    assert len(provider.requests) == 1
    await kernel.billing.close_run("run-at-once")
    report = await kernel.billing.report(mandate_id="m1", snapshot=False)
    assert 0 < report.calls_chf <= 0.15 and report.held_chf == 0.0


async def test_a_failed_write_keeps_the_rows_for_the_next_batch(db):
    """The database refuses the run's write (here: its tables are not there yet for a moment):
    the rows wait and the next flush writes them."""
    from nyla.models.billing import Charge

    billing = BillingService(db)
    run = RunContext(user_id="alice", mandate_id="m1", run_id="run-retry")
    billing.record(run, Charge("agent", "x:model", 0.5, 10, 5))
    async with db.session() as s:
        from sqlalchemy import text

        await s.execute(text("ALTER TABLE billing_ledger RENAME TO billing_ledger_away"))
    with pytest.raises(Exception, match="billing_ledger"):
        await billing.close_run("run-retry")
    async with db.session() as s:
        await s.execute(text("ALTER TABLE billing_ledger_away RENAME TO billing_ledger"))
    await billing.flush()
    rows = await billing.run_entries("run-retry")
    assert [(r.operation, r.cost_chf) for r in rows] == [("agent", 0.5)]
