"""The request's timezone (seeds: ``X-User-Timezone`` → context variable → the prompt's date
block). The middleware stores the header's IANA name in a context variable; invalid or missing
means UTC, never the server's zone. Storage stays UTC; only user-visible times use it."""

from __future__ import annotations

from contextvars import ContextVar
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from starlette.types import ASGIApp, Receive, Scope, Send

HEADER = "x-user-timezone"
_request_timezone: ContextVar[str] = ContextVar("nyla_request_timezone", default="UTC")


def valid_timezone(name: str | None) -> str:
    """``name`` when it is a known IANA zone, else ``UTC``."""
    if not name or len(name) > 64:
        return "UTC"
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
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


class TimezoneMiddleware:
    """Pure ASGI middleware (no buffering, so SSE streams pass through untouched)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = dict(scope.get("headers") or []).get(HEADER.encode())
        token = _request_timezone.set(valid_timezone(raw.decode("latin-1") if raw else None))
        try:
            await self.app(scope, receive, send)
        finally:
            _request_timezone.reset(token)
