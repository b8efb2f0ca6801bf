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
import math
from collections.abc import AsyncIterator
from typing import Any

from nyla.errors import ProviderTimeoutError
from nyla.models.ai import StreamDelta

log = logging.getLogger(__name__)


class Deadline:
    """One await under :class:`Deadlines`: its task, when it is due (loop time), the task's
    cancel count when it began, and whether the deadline cancelled it."""

    __slots__ = ("cancelling", "expired", "task", "when")

    def __init__(self, task: asyncio.Task[Any], when: float) -> None:
        self.task = task
        self.when = when
        self.cancelling = task.cancelling()
        self.expired = False


class Deadlines:
    """``asyncio.timeout_at`` for the awaits of one event loop, with one loop timer for all.

    ``asyncio.timeout_at`` arms and cancels a timer of the loop per await (a ``Timeout``, a
    ``TimerHandle`` pushed on the loop's heap and its cancel: ~30k instructions a model call,
    7 % of the AI service's part of an agent round). Here an await is an entry in a dict and
    the loop timer is armed only for a deadline nearer than the one it is armed for: a run's
    model calls, each due 600 s after it began, arm it once. When it fires, every entry due by
    then is cancelled as ``Timeout`` cancels it, and it is armed again for the nearest one
    left. :meth:`leave` takes the cancel back as ``Timeout.__aexit__`` does."""

    __slots__ = ("_armed_for", "_due", "_timer", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._due: dict[Deadline, None] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._armed_for = math.inf

    def enter(self, when: float) -> Deadline:
        """Bound the current task's await from here to :meth:`leave` by ``when``."""
        task = asyncio.current_task(self.loop)
        if task is None:
            raise RuntimeError("Deadlines.enter must be called inside a task")
        entry = Deadline(task, when)
        self._due[entry] = None
        if when < self._armed_for:
            self._arm(when)
        return entry

    def leave(self, entry: Deadline, exc: BaseException | None) -> bool:
        """The await of ``entry`` ended (with ``exc``): ``True`` when ``exc`` is the cancel its
        deadline caused (the caller raises ``TimeoutError`` instead, as ``Timeout`` does)."""
        self._due.pop(entry, None)
        if not entry.expired:
            return False
        return entry.task.uncancel() <= entry.cancelling and isinstance(exc, asyncio.CancelledError)

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.loop.call_at(when, self._fire, when)
        self._armed_for = when

    def _fire(self, armed_for: float) -> None:
        self._timer, self._armed_for = None, math.inf
        nearest = math.inf
        for entry in list(self._due):
            if entry.when <= armed_for:  # due: the loop runs a timer within its resolution
                del self._due[entry]
                entry.expired = True
                entry.task.cancel()
            else:
                nearest = min(nearest, entry.when)
        if nearest < math.inf:
            self._arm(nearest)


#: the :class:`Deadlines` of the event loop that asked last (one per loop in use)
_deadlines: Deadlines | None = None


def loop_deadlines(loop: asyncio.AbstractEventLoop) -> Deadlines:
    """The :class:`Deadlines` of ``loop`` (the running loop)."""
    global _deadlines
    kept = _deadlines
    if kept is None or kept.loop is not loop:
        kept = _deadlines = Deadlines(loop)
    return kept


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
