"""The request's timezone (seeds: ``X-User-Timezone`` → context variable → the prompt's date
block). The host's middleware (:mod:`nyla_host.request_gate`) stores the header's IANA name in
a context variable; invalid or missing
means UTC, never the server's zone, and never an error: a header that is no zone is ignored,
so no route (``/healthz`` least of all) can fail on it. Storage stays UTC; only user-visible
times use it."""

from __future__ import annotations

import functools
import logging
import re
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, available_timezones

log = logging.getLogger(__name__)
HEADER = "x-user-timezone"
_request_timezone: ContextVar[str] = ContextVar("nyla_request_timezone", default="UTC")
#: what an IANA zone name looks like (``Europe/Zurich``, ``Etc/GMT+1``): no dots, no empty parts
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+){0,2}")


@functools.cache
def known_zones() -> frozenset[str]:
    """Every zone the installed tz database holds (read once; files only, no folders)."""
    try:
        return frozenset(available_timezones())
    except Exception:  # a tz database that cannot be listed: every request is UTC
        log.warning("the tz database could not be listed; every request's timezone is UTC")
        return frozenset()


@functools.lru_cache(maxsize=512)
def valid_timezone(name: str | None) -> str:
    """``name`` when it is a zone of the tz database, else ``UTC``. Only names the database
    lists reach ``ZoneInfo``, which otherwise opens whatever a name points at: a folder such
    as ``America`` raised ``IsADirectoryError``, a 500 on every route. Remembered for the
    last 512 names (every request asks; a client sends the same one each time)."""
    if not name or len(name) > 64 or not _ZONE_NAME.fullmatch(name) or name not in known_zones():
        return "UTC"
    try:
        ZoneInfo(name)
    except Exception:
        return "UTC"
    return name


def request_timezone() -> str:
    """The IANA name of the current request's timezone (``UTC`` outside a request)."""
    return _request_timezone.get()


def request_now() -> datetime:
    """Now, in the current request's timezone (for user-visible values only)."""
    return datetime.now(UTC).astimezone(ZoneInfo(request_timezone()))


def local_iso(value: datetime | None) -> str | None:
    """``value`` (stored in UTC) as ISO text in the request's timezone."""
    if value is None:
        return None
    return value.astimezone(ZoneInfo(request_timezone())).isoformat()


def enter_request_timezone(raw: bytes | None) -> Token[str]:
    """Make the ``X-User-Timezone`` header's value (validated; UTC without one) the current
    request's timezone; :func:`leave_request_timezone` with the token when it ends."""
    return _request_timezone.set(valid_timezone(raw.decode("latin-1") if raw else None))


def leave_request_timezone(token: Token[str]) -> None:
    """End what :func:`enter_request_timezone` began."""
    _request_timezone.reset(token)
