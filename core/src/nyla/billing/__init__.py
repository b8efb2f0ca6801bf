"""Billing: the ledger of every AI operation and of the knowledge store's storage, per user
and mandate in CHF, the spending preflight (limits, credit) and the reports."""
