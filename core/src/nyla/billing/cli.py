"""``nyla billing``: the month's report per mandate and user, spending limits, credit, and
the knowledge store's storage snapshot (see :mod:`nyla.billing.service`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import click

from nyla.commands.output import emit_json, json_option, run_async, table
from nyla.models.billing import SpendingPolicy

if TYPE_CHECKING:
    from nyla.billing.service import BillingService


def _with_billing(work: Callable[[BillingService], Awaitable[Any]]) -> Any:
    """Run ``work`` on the kernel's billing service, then close the kernel."""
    from nyla.kernel import Kernel

    kernel = Kernel()

    async def go() -> Any:
        try:
            return await work(kernel.billing)
        finally:
            await kernel.aclose()

    return run_async(go())


def _subject(user_id: str | None, mandate_id: str | None) -> tuple[str, str]:
    if (user_id is None) == (mandate_id is None):
        raise click.UsageError("name exactly one of --user U or --mandate M")
    return ("user", str(user_id)) if user_id is not None else ("mandate", str(mandate_id))


def _chf(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


@click.group()
def billing() -> None:
    """The ledger of AI calls and storage per mandate and user, limits and credit."""


@billing.command("report")
@click.option("--mandate", "mandate_id", default=None, help="Only this mandate.")
@click.option("--user", "user_id", default=None, help="Only this user.")
@click.option("--month", default=None, help="YYYY-MM (default: this month).")
@json_option
def report(mandate_id: str | None, user_id: str | None, month: str | None, as_json: bool) -> None:
    """The month's spending: calls per user, mandate and operation, and storage (a storage
    snapshot is taken for the current month)."""
    try:
        result = _with_billing(lambda b: b.report(month, mandate_id=mandate_id, user_id=user_id))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        emit_json(result.to_wire())
        return
    table(
        f"billing {result.month}",
        ["mandate", "user", "kind", "operation", "calls", "in tok", "out tok", "CHF"],
        [
            (
                x.mandate_id or "-",
                x.user_id or "-",
                x.kind,
                x.operation,
                x.calls,
                x.input_tokens,
                x.output_tokens,
                _chf(x.cost_chf),
            )
            for x in result.lines
        ]
        + [
            (
                x.mandate_id or "-",
                x.user_id or "-",
                "storage",
                f"{x.bytes} B",
                x.chunks,
                "",
                "",
                _chf(x.cost_chf),
            )
            for x in result.storage
        ],
    )
    click.echo(
        f"calls {_chf(result.calls_chf)} + storage {_chf(result.storage_chf)} = "
        f"{_chf(result.total_chf)} CHF; held {_chf(result.held_chf)}"
        + (f"; credit left {_chf(result.credit_chf)}" if result.credit_chf is not None else "")
    )


@billing.group("limits")
def limits() -> None:
    """Monthly limits, the spending switch and prepaid mode per mandate or user."""


@limits.command("set")
@click.option("--mandate", "mandate_id", default=None, help="The mandate the limit is for.")
@click.option("--user", "user_id", default=None, help="The user the limit is for.")
@click.option("--monthly", type=float, default=None, help="Monthly limit in CHF.")
@click.option("--no-limit", is_flag=True, help="Remove the monthly limit.")
@click.option("--prepaid/--postpaid", default=None, help="Spend only added credit (mandates).")
@click.option("--block/--unblock", default=None, help="Refuse every call / allow again.")
@json_option
def limits_set(
    mandate_id: str | None,
    user_id: str | None,
    monthly: float | None,
    no_limit: bool,
    prepaid: bool | None,
    block: bool | None,
    as_json: bool,
) -> None:
    """Set what a mandate or user may spend; what is not named stays as it was."""
    kind, subject = _subject(user_id, mandate_id)
    if monthly is not None and no_limit:
        raise click.UsageError("give --monthly or --no-limit, not both")
    changes: dict[str, Any] = {}
    if monthly is not None or no_limit:
        changes["monthly_limit_chf"] = monthly
    if prepaid is not None:
        changes["prepaid"] = prepaid
    if block is not None:
        changes["spending_allowed"] = not block
    if not changes:
        raise click.UsageError("name what to set: --monthly, --no-limit, --prepaid, --block ...")
    try:
        policy = _with_billing(lambda b: b.update_policy(kind, subject, **changes))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    _show([policy], as_json)


@limits.command("show")
@click.option("--mandate", "mandate_id", default=None, help="Only this mandate.")
@click.option("--user", "user_id", default=None, help="Only this user.")
@json_option
def limits_show(mandate_id: str | None, user_id: str | None, as_json: bool) -> None:
    """Every stored policy (of one mandate or user when named)."""
    kind = "mandate" if mandate_id is not None else "user" if user_id is not None else None
    subject = mandate_id if mandate_id is not None else user_id
    _show(_with_billing(lambda b: b.policies(kind, subject)), as_json)


def _show(policies: list[SpendingPolicy], as_json: bool) -> None:
    if as_json:
        emit_json([p.to_wire() for p in policies])
        return
    table(
        "spending policies",
        ["for", "id", "monthly CHF", "spending", "mode"],
        [
            (
                p.kind,
                p.subject,
                _chf(p.monthly_limit_chf),
                "allowed" if p.spending_allowed else "blocked",
                "prepaid" if p.prepaid else "postpaid",
            )
            for p in policies
        ],
    )


@billing.group("credit")
def credit() -> None:
    """Credit of prepaid mandates."""


@credit.command("add")
@click.option("--mandate", "mandate_id", required=True, help="The mandate to credit.")
@click.argument("amount", type=float)
@click.option("--note", default="", help="Why (an invoice number, say).")
@json_option
def credit_add(mandate_id: str, amount: float, note: str, as_json: bool) -> None:
    """Add AMOUNT CHF of credit to a mandate (negative: correct an earlier amount)."""
    try:
        balance = _with_billing(
            lambda b: b.add_credit(mandate_id, amount, note=note, added_by="cli")
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        emit_json({"mandateId": mandate_id, "addedChf": amount, "balanceChf": balance})
    else:
        click.echo(f"mandate {mandate_id}: {amount:+.4f} CHF, balance {balance:.4f} CHF")


@billing.command("snapshot")
@json_option
def snapshot(as_json: bool) -> None:
    """Measure and store what the knowledge store holds per user and mandate now."""
    lines = _with_billing(lambda b: b.snapshot_storage())
    if as_json:
        emit_json([x.to_wire() for x in lines])
        return
    table(
        "storage",
        ["mandate", "user", "bytes", "chunks", "CHF/month"],
        [
            (x.mandate_id or "-", x.user_id or "-", x.bytes, x.chunks, _chf(x.cost_chf))
            for x in lines
        ],
    )
