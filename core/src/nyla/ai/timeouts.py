"""Bounds of model calls: the timeout settings and a stream with idle and total timeouts.

Settings (``kernel.settings["ai"]``, else the environment / config file): ``timeout_s`` /
``NYLA_AI_TIMEOUT_S`` (one call, default 600), ``stream_idle_timeout_s`` /
``NYLA_AI_STREAM_IDLE_TIMEOUT_S`` (silence between two streamed chunks, default
min(timeout, 120)), ``retry_budget_s`` / ``NYLA_AI_RETRY_BUDGET_S`` (all attempts on one
model), ``model_timeouts`` (model id -> seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from nyla.errors import ProviderTimeoutError
from nyla.models.ai import StreamDelta

log = logging.getLogger(__name__)


def seconds_setting(*candidates: Any) -> float:
    """The first candidate that is a positive number of seconds."""
    for value in candidates:
        if value in (None, ""):
            continue
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            log.warning("ignoring the timeout setting %r (not a number)", value)
            continue
        if seconds > 0:
            return seconds
    return 600.0


async def bounded_stream(
    stream: Any, *, idle_s: float, total_s: float, provider_id: str
) -> AsyncIterator[StreamDelta]:
    """``stream`` with a bound on the silence between items and on the whole stream; either
    running out raises :class:`ProviderTimeoutError` (the provider's stream is closed)."""
    iterator = stream.__aiter__()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + total_s
    try:
        while True:
            remaining = deadline - loop.time()
            wait = min(idle_s, remaining)
            try:
                if wait <= 0:
                    raise TimeoutError
                async with asyncio.timeout(wait):
                    delta = await iterator.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                which = "idle" if remaining > idle_s else "total"
                limit = idle_s if which == "idle" else total_s
                raise ProviderTimeoutError(
                    f"{provider_id}: the stream stalled ({which} timeout {limit:g} s)",
                    provider=provider_id,
                ) from None
            yield delta
    finally:
        closer = getattr(iterator, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):  # closing a stalled stream: best effort
                await closer()
