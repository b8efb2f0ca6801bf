"""The Swiss SME chart of accounts (KMU-Kontenrahmen) the trustee feature books on."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChartAccount:
    """One account of the chart: number, label, type and currency."""

    number: str
    label: str
    type: str  # asset | liability | equity | revenue | expense
    currency: str = "CHF"


CHART: tuple[ChartAccount, ...] = (
    ChartAccount("1000", "Kasse", "asset"),
    ChartAccount("1020", "Bank UBS Geschäftskonto", "asset"),
    ChartAccount("1021", "Bank PostFinance", "asset"),
    ChartAccount("1022", "Bank ZKB Sparkonto", "asset"),
    ChartAccount("1100", "Forderungen aus Lieferungen und Leistungen (Debitoren)", "asset"),
    ChartAccount("1170", "Vorsteuer MWST Material, Waren, Dienstleistungen", "asset"),
    ChartAccount("1171", "Vorsteuer MWST Investitionen, übriger Betriebsaufwand", "asset"),
    ChartAccount("1500", "Maschinen und Apparate", "asset"),
    ChartAccount(
        "2000", "Verbindlichkeiten aus Lieferungen und Leistungen (Kreditoren)", "liability"
    ),
    ChartAccount("2200", "Geschuldete MWST (Umsatzsteuer)", "liability"),
    ChartAccount("2800", "Aktienkapital", "equity"),
    ChartAccount("2970", "Gewinnvortrag", "equity"),
    ChartAccount("3200", "Handelserlöse", "revenue"),
    ChartAccount("3400", "Dienstleistungserlöse", "revenue"),
    ChartAccount("4200", "Handelswarenaufwand", "expense"),
    ChartAccount("4400", "Aufwand für bezogene Dienstleistungen", "expense"),
    ChartAccount("5000", "Lohnaufwand", "expense"),
    ChartAccount("5700", "Sozialversicherungsaufwand", "expense"),
    ChartAccount("6000", "Raumaufwand (Miete)", "expense"),
    ChartAccount("6200", "Fahrzeugaufwand", "expense"),
    ChartAccount("6500", "Verwaltungsaufwand", "expense"),
    ChartAccount("6570", "Informatikaufwand", "expense"),
    ChartAccount("6600", "Werbeaufwand", "expense"),
    ChartAccount("6900", "Finanzaufwand (Bankspesen)", "expense"),
)

BY_NUMBER: dict[str, ChartAccount] = {a.number: a for a in CHART}

# Opening balances on 1 January (debit positive, credit negative); they sum to zero.
OPENING_BALANCES: dict[str, str] = {
    "1000": "3200.00",
    "1020": "148500.00",
    "1021": "36250.00",
    "1022": "60000.00",
    "1100": "42380.00",
    "1500": "28000.00",
    "2000": "-21430.00",
    "2200": "-9650.00",
    "2800": "-100000.00",
    "2970": "-187250.00",
}
