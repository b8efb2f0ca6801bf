"""Who a command acts as when nobody says: one default identity for every ``nyla`` command
and for the token ``nyla tokens create`` makes (so the CLI and the web page are one person)."""

from __future__ import annotations

DEFAULT_USER = "local"


def default_user() -> str:
    """``NYLA_USER`` (environment, else nyla's config file) when set, else ``local`` — the
    same for indexing, search, agent runs and sign-in tokens, so what one command stores the
    next one, and the page, sees."""
    from nyla.config import config_value

    return (config_value("NYLA_USER") or "").strip() or DEFAULT_USER
