"""Who a command acts as when nobody says: one default identity for every ``nyla`` command."""

from __future__ import annotations

import os

DEFAULT_USER = "local"


def default_user() -> str:
    """``NYLA_USER`` when set, else ``local`` — the same for indexing, search and agent runs,
    so what one command stores the next one sees."""
    return os.environ.get("NYLA_USER", "").strip() or DEFAULT_USER
