"""Expected answers of the benchmark questions, computed from the generated dataset.

Each question in ``questions.yaml`` names an ``expect`` kind and its parameters; the numbers
come from :func:`generator.generate` directly (plain Python over the dataset, independent of
the SQL path the data agent takes), never typed by hand.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

from nyla_feature_trustee.chart import BY_NUMBER
from nyla_feature_trustee.ledger import ZERO, TrusteeDataset


def _match(account: str, spec: dict[str, Any]) -> bool:
    if "account" in spec:
        return account == str(spec["account"])
    if "account_prefix" in spec:
        return account.startswith(str(spec["account_prefix"]))
    if "account_type" in spec:
        return BY_NUMBER[account].type == spec["account_type"]
    return True


def _lines(data: TrusteeDataset, spec: dict[str, Any]) -> list[Any]:
    start = date.fromisoformat(str(spec.get("from", f"{data.year}-01-01")))
    end = date.fromisoformat(str(spec.get("to", f"{data.year}-12-31")))
    out = []
    for e, ln in data.lines():
        if not (start <= e.entry_date <= end) or not _match(ln.account_number, spec):
            continue
        if "cost_center" in spec and ln.cost_centre != spec["cost_center"]:
            continue
        out.append(ln)
    return out


def _side(line: Any, side: str) -> Decimal:
    return {"debit": line.debit, "credit": line.credit, "amount": line.amount}[side]


def closing_balance(data: TrusteeDataset, spec: dict[str, Any]) -> list[Decimal]:
    """Sum of the closing balances of the matching accounts for one period."""
    field = spec.get("field", "closing_balance")
    total = sum(
        (
            getattr(b, field)
            for b in data.balances
            if b.period == spec["period"] and _match(b.account_number, spec)
        ),
        ZERO,
    )
    return [total]


def journal_sum(data: TrusteeDataset, spec: dict[str, Any]) -> list[Decimal]:
    """Sum of ``side`` (debit, credit or amount) over the matching journal lines."""
    return [sum((_side(ln, spec.get("side", "amount")) for ln in _lines(data, spec)), ZERO)]


def movement(data: TrusteeDataset, spec: dict[str, Any]) -> list[Decimal]:
    """Debits and credits of the matching lines."""
    lines = _lines(data, spec)
    return [sum((ln.debit for ln in lines), ZERO), sum((ln.credit for ln in lines), ZERO)]


def line_stat(data: TrusteeDataset, spec: dict[str, Any]) -> list[Decimal]:
    """MAX, MIN or AVG of ``side`` over the matching lines with a non-zero ``side``."""
    values = [_side(ln, spec["side"]) for ln in _lines(data, spec)]
    values = [v for v in values if v != ZERO]
    fn = spec["stat"]
    if fn == "max":
        return [max(values)]
    if fn == "min":
        return [min(values)]
    return [sum(values, ZERO) / len(values)]


def top_closing(data: TrusteeDataset, spec: dict[str, Any]) -> list[Decimal]:
    """The ``n`` largest closing balances of the matching accounts in one period."""
    values = sorted(
        (
            b.closing_balance
            for b in data.balances
            if b.period == spec["period"] and _match(b.account_number, spec)
        ),
        reverse=True,
    )
    return values[: int(spec["n"])]


def top_group(data: TrusteeDataset, spec: dict[str, Any]) -> list[Decimal]:
    """The account with the largest sum of ``side`` and that sum."""
    sums: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for ln in _lines(data, spec):
        sums[ln.account_number] += _side(ln, spec["side"])
    account, value = max(sums.items(), key=lambda kv: kv[1])
    return [Decimal(account), value]


def vat_due(data: TrusteeDataset, spec: dict[str, Any]) -> list[Decimal]:
    """Output VAT (credits on 2200) minus input VAT (debits on 117x) within the quarter."""
    q = int(spec["quarter"])
    start = date(data.year, 3 * q - 2, 1)
    end = date(data.year, 3 * q, 31 if 3 * q in (3, 12) else 30)
    rng = {"from": start.isoformat(), "to": end.isoformat()}
    output = journal_sum(data, {**rng, "account": "2200", "side": "credit"})[0]
    inputs = journal_sum(data, {**rng, "account_prefix": "117", "side": "debit"})[0]
    return [output - inputs]


def count_entries(data: TrusteeDataset, spec: dict[str, Any]) -> list[Decimal]:
    """Number of entries in a date range whose reference starts with ``reference_prefix``."""
    start = date.fromisoformat(str(spec["from"]))
    end = date.fromisoformat(str(spec["to"]))
    prefix = str(spec.get("reference_prefix", ""))
    n = sum(
        1 for e in data.entries if start <= e.entry_date <= end and e.reference.startswith(prefix)
    )
    return [Decimal(n)]


def entry_lines(data: TrusteeDataset, spec: dict[str, Any]) -> list[Decimal]:
    """Sum of ``side`` of the lines of the entry ``reference`` (optionally one account)."""
    entry = next(e for e in data.entries if e.reference == spec["reference"])
    return [
        sum(
            (
                _side(ln, spec.get("side", "debit"))
                for ln in entry.lines
                if "account" not in spec or ln.account_number == str(spec["account"])
            ),
            ZERO,
        )
    ]


EXPECT_KINDS: dict[str, Callable[[TrusteeDataset, dict[str, Any]], list[Decimal]]] = {
    "closing_balance": closing_balance,
    "journal_sum": journal_sum,
    "movement": movement,
    "line_stat": line_stat,
    "top_closing": top_closing,
    "top_group": top_group,
    "vat_due": vat_due,
    "count_entries": count_entries,
    "entry_lines": entry_lines,
}


def expected_numbers(data: TrusteeDataset, expect: dict[str, Any]) -> list[float]:
    """The numbers an answer must contain, for one ``expect`` block of the questions file."""
    spec = dict(expect)
    kind = spec.pop("kind")
    if kind not in EXPECT_KINDS:
        raise ValueError(f"unknown expect kind {kind!r} (known: {', '.join(EXPECT_KINDS)})")
    return [round(float(v), 2) for v in EXPECT_KINDS[kind](data, spec)]
