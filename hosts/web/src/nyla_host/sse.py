"""Server-Sent Events framing for run events: ``id`` is the event's sequence number, so a
client resumes with ``Last-Event-ID``; ``: ping`` comments keep proxies from closing an idle
stream; ``X-Accel-Buffering: no`` keeps nginx from buffering it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi.responses import StreamingResponse

HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}


def frame(event: dict[str, Any]) -> str:
    """One SSE message for a run event."""
    return f"id: {event['seq']}\nevent: {event['type']}\ndata: {json.dumps(event)}\n\n"


EndFn = Callable[[], Awaitable[dict[str, Any]]]


async def _frames(events: AsyncIterator[dict[str, Any] | None], end: EndFn) -> AsyncIterator[str]:
    yield "retry: 2000\n\n"
    async for event in events:
        yield ": ping\n\n" if event is None else frame(event)
    yield f"event: end\ndata: {json.dumps(await end())}\n\n"


def sse_response(events: AsyncIterator[dict[str, Any] | None], end: EndFn) -> StreamingResponse:
    """A streaming response of ``events`` (``None`` = ping) closed by an ``end`` message
    whose data ``end()`` gives (the run's final status)."""
    return StreamingResponse(_frames(events, end), media_type="text/event-stream", headers=HEADERS)


def last_event_id(header: str | None, query: str | None) -> int:
    """The sequence number to resume after (header wins; bad values mean from the start)."""
    for raw in (header, query):
        if raw is not None and raw.strip().isdigit():
            return int(raw.strip())
    return 0
