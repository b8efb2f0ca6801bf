"""``nyla billing``: limits set/show, credit add, the report (table and --json) over ledger
rows in the database, and clear usage errors."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from nyla.billing.service import BillingService
from nyla.db import Database
from nyla.models.agent import RunContext
from nyla.models.billing import Charge
from nyla.testing.helpers import invoke_cli

pytestmark = pytest.mark.db


async def record_a_run(url: str) -> None:
    """Two calls of one run written to the ledger, as the AI service does."""
    db = Database(url)
    try:
        billing = BillingService(db)
        alice = RunContext(user_id="alice", mandate_id="m1", run_id="run-1")
        billing.record(alice, Charge("agent", "x:model", 0.25, 100, 20))
        billing.record(alice, Charge("embedding", "x:embed", 0.05, 40))
        assert await billing.close_run("run-1") == 2
    finally:
        await db.dispose()


@pytest.fixture
def url(cli_database, monkeypatch) -> str:
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    return cli_database


def test_limits_credit_and_the_report(url):
    limit = invoke_cli(["billing", "limits", "set", "--mandate", "m1", "--monthly", "5", "--json"])
    assert limit.exit_code == 0, limit.output
    assert json.loads(limit.output) == [
        {
            "kind": "mandate",
            "subject": "m1",
            "monthlyLimitChf": 5.0,
            "spendingAllowed": True,
            "prepaid": False,
        }
    ]
    prepaid = invoke_cli(["billing", "limits", "set", "--mandate", "m1", "--prepaid"])
    assert prepaid.exit_code == 0 and "prepaid" in prepaid.output and "5.0000" in prepaid.output
    shown = json.loads(invoke_cli(["billing", "limits", "show", "--json"]).output)
    assert shown[0]["prepaid"] is True and shown[0]["monthlyLimitChf"] == 5.0
    credit = invoke_cli(["billing", "credit", "add", "--mandate", "m1", "2.5", "--json"])
    assert json.loads(credit.output) == {"mandateId": "m1", "addedChf": 2.5, "balanceChf": 2.5}

    asyncio.run(record_a_run(url))

    report = json.loads(invoke_cli(["billing", "report", "--mandate", "m1", "--json"]).output)
    assert report["callsChf"] == pytest.approx(0.30)
    assert report["creditChf"] == pytest.approx(2.2)
    assert {(x["operation"], x["calls"]) for x in report["lines"]} == {
        ("agent", 1),
        ("embedding", 1),
    }
    table = invoke_cli(["billing", "report", "--mandate", "m1"])
    assert table.exit_code == 0
    assert "agent" in table.output and "credit left 2.2000" in table.output
    old = json.loads(invoke_cli(["billing", "report", "--month", "2020-01", "--json"]).output)
    assert old["lines"] == [] and old["totalChf"] == 0


def test_usage_errors_are_clear(url):
    bad_month = invoke_cli(["billing", "report", "--month", "2026-13"])
    assert bad_month.exit_code == 2 and "YYYY-MM" in bad_month.output
    user_prepaid = invoke_cli(["billing", "limits", "set", "--user", "u", "--prepaid"])
    assert user_prepaid.exit_code == 2 and "prepaid is for mandates" in user_prepaid.output
    nothing = invoke_cli(["billing", "limits", "set", "--mandate", "m1"])
    assert nothing.exit_code == 2 and "name what to set" in nothing.output
    both = invoke_cli(["billing", "limits", "set", "--mandate", "m", "--user", "u", "--block"])
    assert both.exit_code == 2 and "exactly one" in both.output
    zero = invoke_cli(["billing", "credit", "add", "--mandate", "m1", "0"])
    assert zero.exit_code == 2 and "must not be 0" in zero.output


def test_a_one_off_call_is_billed_to_the_cli_s_identity(make_kernel, scripted, monkeypatch):
    """``nyla ai ask`` acts as the CLI's user (``NYLA_USER``) in ``--mandate``: its ledger row
    is written when the command ends (the kernel is closed), not left in memory."""
    monkeypatch.setenv("NYLA_USER", "carol")
    kernel = make_kernel(scripted(lambda r, i: "hello", price_input=50.0), builtins=False)
    monkeypatch.setattr("nyla.ai.cli._kernel", lambda: kernel)
    result = invoke_cli(["ai", "ask", "hi", "--mandate", "m9", "--json"])
    assert result.exit_code == 0, result.output
    cost = json.loads(result.output)["costChf"]

    async def report() -> Any:
        try:
            # another billing service (another process): only what was written
            return await BillingService(kernel.db).report(mandate_id="m9", snapshot=False)
        finally:
            await kernel.db.drop_schema()
            await kernel.db.dispose()

    written = asyncio.run(report())
    assert [(x.user_id, x.operation, x.calls) for x in written.lines] == [
        ("carol", "dataAnalyse", 1)
    ]
    assert written.calls_chf == pytest.approx(cost) and cost > 0
