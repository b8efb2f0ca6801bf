"""Server-Sent Events framing for run events: ``id`` is the event's sequence number, so a
client resumes with ``Last-Event-ID``; ``: ping`` comments keep proxies from closing an idle
stream; ``X-Accel-Buffering: no`` keeps nginx from buffering it. Every stream ends with an
``end`` message, even one whose events failed half-way (an ``error`` message comes first)."""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi.responses import StreamingResponse

log = logging.getLogger(__name__)

HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}
#: the highest event id there can be (``host_run_events.seq`` is a PostgreSQL integer)
MAX_EVENT_ID = 2**31 - 1
_EVENT_ID = re.compile(r"[0-9]{1,10}")


class InvalidEventId(ValueError):
    """A ``Last-Event-ID`` that is not the id of an event of any stream."""


def frame(event: dict[str, Any]) -> str:
    """One SSE message for a run event."""
    return f"id: {event['seq']}\nevent: {event['type']}\ndata: {json.dumps(event)}\n\n"


EndFn = Callable[[], Awaitable[dict[str, Any]]]


async def _frames(events: AsyncIterator[dict[str, Any] | None], end: EndFn) -> AsyncIterator[str]:
    yield "retry: 2000\n\n"
    try:
        async for event in events:
            yield ": ping\n\n" if event is None else frame(event)
    except Exception as exc:
        # the status line went out long ago: the stream's own messages are all that is left
        # to tell the client, and a stream cut without its end would be resumed forever
        incident = uuid.uuid4().hex
        log.error("event stream failed [%s]", incident, exc_info=exc)
        error = {"detail": f"the stream failed (correlation id {incident})", "error": "Internal"}
        yield f"event: error\ndata: {json.dumps(error)}\n\n"
    try:
        final = await end()
    except Exception as exc:
        log.error("the end of an event stream could not be read", exc_info=exc)
        final = {"status": "unknown"}
    yield f"event: end\ndata: {json.dumps(final)}\n\n"


def sse_response(events: AsyncIterator[dict[str, Any] | None], end: EndFn) -> StreamingResponse:
    """A streaming response of ``events`` (``None`` = ping) closed by an ``end`` message
    whose data ``end()`` gives (the run's final status)."""
    return StreamingResponse(_frames(events, end), media_type="text/event-stream", headers=HEADERS)


def last_event_id(header: str | None, query: str | None) -> int:
    """The sequence number to resume after: the header's, else the query's, else 0 (from the
    start; an empty value is the start too). Anything but 1 to 10 ASCII digits up to
    :data:`MAX_EVENT_ID` raises :class:`InvalidEventId`: a client only ever sends back an id
    this server gave it, so any other value is a mistake to report, not to guess at."""
    for raw in (header, query):
        value = (raw or "").strip(" \t")
        if not value:
            continue
        if not _EVENT_ID.fullmatch(value) or int(value) > MAX_EVENT_ID:
            shown = value if len(value) <= 24 else value[:20] + "…"
            raise InvalidEventId(
                f"Last-Event-ID must be the id of an event of this stream, a whole number "
                f"from 0 to {MAX_EVENT_ID} in ASCII digits; got {shown!r}"
            )
        return int(value)
    return 0
