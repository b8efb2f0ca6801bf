"""The watchdog that names a tool blocking the event loop.

An ``async def`` tool that does blocking work (``time.sleep``, a synchronous HTTP client, a
large parse) holds the event loop: no other run, stream or health check moves until it
returns, and its own deadline cannot fire. Python cannot pre-empt it, so the watchdog does
what can be done from outside: a daemon thread per event loop looks, while tool calls are in
flight, which task runs on the loop (``asyncio.current_task(loop)`` is a dictionary look-up,
safe from another thread). Only when the same tool's task runs at two looks in a row does it
post a heartbeat: the loop waiting for I/O, or busy with anything but a tool (the run's own
work, another run), is held by no tool, and a beat landing there would only wake the loop
later (an instrumented selector or uvloop, where the loop's wait cannot be told from its
work by its frame, made the earlier frame-based look beat every other round). When a heartbeat
waits longer than the block limit, the tool holding the loop is reported by name with the
line it is blocked at. :mod:`nyla.agent.isolation` then runs that tool's later calls in a
thread of their own, so it can stall the loop at most once per process.

``NYLA_TOOL_BLOCK_LIMIT_MS`` sets the limit (default 250 ms; ``0`` switches the watchdog off).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
import weakref
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: how often the watchdog looks while a heartbeat it posted is not yet answered
_INTERVAL_S = 0.02
#: how often it looks while no tool holds the loop (or a beat was answered), as a share of
#: the limit: a block is then seen within a quarter of the limit (and :data:`_INTERVAL_S`) of
#: its start, and the thread wakes a third as often while tools wait (each wake is CPU the
#: process pays)
_IDLE_SHARE = 0.25

#: how long the thread keeps its pace after the last tool call ended before it waits for the
#: next one: an agent run's tools come a model call apart, and waking a waiting thread costs
#: the loop's thread an ``Event.set`` (a lock, a futex wake, a GIL hand-over) every round
_LINGER_S = 1.0


def block_limit_s() -> float:
    """How long a tool may hold the event loop before it is reported (0: never)."""
    raw = os.environ.get("NYLA_TOOL_BLOCK_LIMIT_MS", "250")
    try:
        return max(0.0, float(raw)) / 1000
    except ValueError:
        return 0.25


@dataclass
class Blocking:
    """What the watchdog saw of one tool call holding the loop."""

    tool: str
    #: the longest the loop was held, in seconds (grows while the block lasts)
    seconds: float = 0.0
    #: ``file:line in function`` where the tool's code was when it was seen (for the log)
    where: str = ""
    #: the function of the tool's own that held the loop (for the model: no server path)
    function: str = ""
    reported: bool = False


class _Watched:
    """One tool call watched (``blocking``: what was seen of it holding the loop). Slotted,
    with :meth:`release` a method rather than a closure made per call: one is made for every
    tool call (~4k instructions less a call)."""

    __slots__ = ("blocking", "key", "task", "tasks", "tool")

    def __init__(self, tool: str, key: object) -> None:
        self.tool, self.key = tool, key
        self.blocking: Blocking | None = None
        #: the watchdog's tasks and this call's task, set by :meth:`LoopWatchdog.add`
        self.tasks: dict[asyncio.Task[object], _Watched] | None = None
        self.task: asyncio.Task[object] | None = None

    def release(self) -> None:
        """Stop watching (the caller calls it as the task's work ends)."""
        tasks = self.tasks
        if tasks is not None:
            tasks.pop(self.task, None)  # type: ignore[arg-type]


#: tool handlers seen blocking the loop (by identity), for :mod:`nyla.agent.isolation`
_blockers: weakref.WeakSet[object] = weakref.WeakSet()
_blocker_ids: set[int] = set()  # handlers that cannot be weakly referenced
#: whether any handler was ever marked (until forgotten): a handler collected since leaves
#: it set, which only costs the look-up
_any_blocker = False
_watchdogs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopWatchdog] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()
#: the watchdog asked for last and its loop (weakly): a run's tool calls share one loop
_last: tuple[weakref.ref[asyncio.AbstractEventLoop], LoopWatchdog] | None = None


def has_blocked(handler: object) -> bool:
    """Whether ``handler`` was seen holding the event loop past the block limit."""
    if not _any_blocker:  # (asked for every tool call: a WeakSet look-up is ~2k instructions)
        return False
    try:
        return handler in _blockers
    except TypeError:
        return id(handler) in _blocker_ids


def _mark_blocker(handler: object) -> None:
    global _any_blocker
    _any_blocker = True
    try:
        _blockers.add(handler)
    except TypeError:
        _blocker_ids.add(id(handler))


def forget_blockers() -> None:
    """Forget every tool seen blocking (tests; a process that reloaded its plugins)."""
    global _any_blocker
    _any_blocker = False
    _blockers.clear()
    _blocker_ids.clear()


def watch(task: asyncio.Task[object], tool: str, handler: object) -> _Watched | None:
    """Watch ``task`` (running ``tool``'s ``handler``) until it ends or the answer's
    ``release()`` is called (the caller calls it as the task's work ends); ``None`` when the
    watchdog is off. Read ``.blocking`` of the answer once the task has ended."""
    global _last
    loop = task.get_loop()
    last = _last
    if last is not None and last[0]() is loop and not last[1].stopped:
        dog = last[1]
    else:
        found = _watchdogs.get(loop)
        if found is None or found.stopped:
            limit = block_limit_s()  # read once per loop: this runs for every tool call
            if limit <= 0:
                return None
            with _lock:
                found = _watchdogs.get(loop)
                if found is None or found.stopped:
                    found = _watchdogs[loop] = LoopWatchdog(loop, limit)
        dog = found
        _last = (weakref.ref(loop), dog)
    watched = _Watched(tool, handler)
    dog.add(task, watched)
    return watched


class LoopWatchdog:
    """One daemon thread watching one event loop for tool tasks that hold it (see the module
    docstring). It waits for a tool call once none has been in flight for
    :data:`_LINGER_S`, and ends with its loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit_s: float) -> None:
        self.loop = loop
        self.limit_s = limit_s
        self.loop_thread = threading.get_ident()
        self.tasks: dict[asyncio.Task[object], _Watched] = {}
        self.wake = threading.Event()
        #: True while the thread waits for a first task (only then does :meth:`add` wake it)
        self.idle = False
        #: True once the thread has ended (its loop closed)
        self.stopped = False
        self.beats = 0
        self.thread = threading.Thread(target=self._run, name="nyla-loop-watchdog", daemon=True)
        self.thread.start()

    def alive(self) -> bool:
        """Whether the watching thread still runs."""
        return not self.stopped and self.thread.is_alive()

    def add(self, task: asyncio.Task[object], watched: _Watched) -> None:
        """Watch ``task`` until ``watched.release()`` is called (on the loop's thread; the
        caller releases it as the task's work ends, which saves the task a done callback)."""
        tasks = self.tasks
        tasks[task] = watched
        watched.tasks, watched.task = tasks, task
        if self.idle:  # (an Event.set per call takes a lock; the thread rarely waits)
            self.wake.set()

    def _beat(self) -> None:
        self.beats += 1

    def _run(self) -> None:
        try:
            self._watch()
        finally:
            self.stopped = True

    def _watch(self) -> None:
        busy_at = time.monotonic()
        while not self.loop.is_closed():
            idle_s = max(_INTERVAL_S, self.limit_s * _IDLE_SHARE)
            if not self.tasks:
                if time.monotonic() - busy_at < _LINGER_S:
                    time.sleep(idle_s)  # a task added meanwhile is seen at the next look
                    continue
                self.wake.clear()
                self.idle = True  # before looking again: a task added from here wakes it
                woke = bool(self.tasks) or self.wake.wait(timeout=5.0)
                self.idle = False
                if not woke and self.loop.is_closed():
                    return
                continue
            busy_at = time.monotonic()
            holder = self._holder()
            if holder is None:
                time.sleep(idle_s)
                continue
            # a tool runs now: a heartbeat only if the same one still does a moment later (a
            # tool's step is microseconds; a beat that lands once the loop waits wakes it)
            time.sleep(_INTERVAL_S)
            if self._holder() is not holder:
                time.sleep(idle_s - _INTERVAL_S)
                continue
            seen = self.beats
            posted = time.monotonic()
            try:
                self.loop.call_soon_threadsafe(self._beat)
            except RuntimeError:  # the loop closed meanwhile
                return
            time.sleep(_INTERVAL_S)
            if self.beats != seen:  # answered: the loop moves
                time.sleep(idle_s - _INTERVAL_S)
                continue
            while self.beats == seen and self.tasks and not self.loop.is_closed():
                held = time.monotonic() - posted
                if held >= self.limit_s:
                    self._blame(held)
                time.sleep(_INTERVAL_S)

    def _holder(self) -> asyncio.Task[object] | None:
        """The watched tool task running on the loop now, or ``None``: the loop waits for
        I/O (no task runs then) or runs something that is no tool's. A tool blocking in a
        selector of its own, or a loop without a selector (uvloop), is seen the same way."""
        task = asyncio.current_task(self.loop)
        return task if task is not None and task in self.tasks else None

    def _blame(self, held: float) -> None:
        """The loop has not run its heartbeat for ``held`` seconds: name the tool holding it."""
        task = asyncio.current_task(self.loop)
        watched = self.tasks.get(task) if task is not None else None  # type: ignore[arg-type]
        if watched is None:
            return
        blocking = watched.blocking
        if blocking is None:
            where = self._where()
            function = where.rsplit(" in ", 1)[-1] if where else ""
            blocking = watched.blocking = Blocking(watched.tool, where=where, function=function)
            _mark_blocker(watched.key)
        blocking.seconds = max(blocking.seconds, held)
        if not blocking.reported:
            blocking.reported = True
            log.warning(
                "tool %s holds the event loop (%.0f ms so far, at %s): it does blocking work "
                "inside 'async def'; its later calls run in a thread of their own",
                watched.tool,
                held * 1000,
                blocking.where or "an unknown line",
            )

    def _where(self) -> str:
        """``file:line in function`` of the tool's own frame (the handler's line that is
        running, below the guard that started it)."""
        frame = sys._current_frames().get(self.loop_thread)
        below = None
        while frame is not None:
            code = frame.f_code
            if code.co_name == "_contained" and code.co_filename.endswith("guard.py"):
                break
            below, frame = frame, frame.f_back
        if below is None or frame is None:
            return ""
        return f"{below.f_code.co_filename}:{below.f_lineno} in {below.f_code.co_name}"
