"""How a vendor says "slow down", read the same way for every connector.

Vendors throttle in different dialects, all documented: ``429`` with ``Retry-After`` (seconds
or an HTTP date); ``429`` with only a reset header, as Unix seconds (ClickUp's
``X-RateLimit-Reset``) or an ISO 8601 time (Jira's ``X-RateLimit-Reset``); ``403`` with a
reason in the JSON body (Google's ``rateLimitExceeded`` / ``userRateLimitExceeded``, to be
retried with exponential backoff). A connector declares its vendor's dialect in its
:class:`~nyla.connections.http.HttpPolicy` (``reset_header``, ``rate_limit_reasons``); this
module turns a response into "throttled, wait N seconds (or unknown)".
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

#: a reset header value above this is a Unix time, below it a number of seconds from now
_EPOCH_FLOOR = 1_000_000_000.0


def seconds_until_reset(raw: str | None, now: float | None = None) -> float | None:
    """Seconds until the vendor's window resets, from a reset header in any documented form:
    Unix seconds (or milliseconds), seconds from now, ISO 8601, or an HTTP date; ``None`` for
    what cannot be read or lies implausibly far ahead (more than a day)."""
    seconds = _seconds_until(raw, time.time() if now is None else now)
    return seconds if seconds is not None and seconds <= _PLAUSIBLE_S else None


#: a reset further away than this is a misread header, not a window
_PLAUSIBLE_S = 86_400.0


def _seconds_until(raw: str | None, now: float) -> float | None:
    if not raw:
        return None
    value = raw.strip()[:64]
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is not None:
        if number != number or number in (float("inf"), float("-inf")):
            return None
        if number > _EPOCH_FLOOR * 1000:  # milliseconds since the epoch
            number /= 1000
        return max(0.0, number - now) if number > _EPOCH_FLOOR else max(0.0, number)
    when = _parse_time(value)
    return None if when is None else max(0.0, when - now)


def _parse_time(value: str) -> float | None:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        try:
            moment = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def body_reasons(content: bytes) -> set[str]:
    """Every ``reason`` / ``status`` / ``code`` string in a JSON error body (Google's
    ``{"error": {"errors": [{"reason": ...}], "status": ...}}`` and similar shapes)."""
    if not content or len(content) > 65_536:
        return set()
    try:
        data = json.loads(content)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return set()
    return set(_reasons(data, depth=0))


def _reasons(data: Any, depth: int) -> Iterator[str]:
    if depth > 4:
        return
    if isinstance(data, dict):
        for key, value in data.items():
            if key in ("reason", "status", "code") and isinstance(value, str):
                yield value
            elif isinstance(value, dict | list):
                yield from _reasons(value, depth + 1)
    elif isinstance(data, list):
        for value in data[:20]:
            yield from _reasons(value, depth + 1)


def is_throttled(status: int, content: bytes, reasons: Iterable[str]) -> bool:
    """Whether a ``403`` (or ``400``) answer is the vendor's way of saying "too many"."""
    wanted = set(reasons)
    return bool(wanted) and status in (400, 403) and bool(body_reasons(content) & wanted)
