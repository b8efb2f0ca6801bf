"""The guard around everything a tool touches: running the handler under a hard deadline,
telling the run's cancellation from a tool's own, and making any result safe to show, store
and send (size-capped, serialisable, valid Unicode).

- Only a cancel of the *run* (the task running the loop is being cancelled) propagates; a
  ``CancelledError``, ``GeneratorExit``, ``KeyboardInterrupt`` or ``SystemExit`` raised inside a
  tool is that tool's failure.
- The deadline is hard: after ``timeout`` the call is answered ``TIMEOUT`` and the tool's task
  is cancelled and left behind (a tool that swallows the cancel cannot hold the run). A tool
  that blocks the event loop past its deadline is still answered ``TIMEOUT`` — its value is
  discarded, never turned into a success. Synchronous handlers run in a worker thread, so the
  loop and the deadline stay live; an ``async def`` handler that blocks the loop is named by
  the watchdog (:mod:`nyla.agent.loop_watch`) and its later calls run in a thread of their own
  (:mod:`nyla.agent.isolation`).
- A ``TimeoutError`` the tool raised itself is a ``TOOL_ERROR``, not a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from nyla.agent.isolation import run_in_own_thread
from nyla.agent.loop_watch import Blocking, has_blocked, watch
from nyla.models.tools import ToolResult
from nyla.text import clean_text, has_unstorable_chars, safe_str

log = logging.getLogger(__name__)

#: characters of a tool result the model (and the trace) get at most
MAX_RESULT_CHARS = 200_000


class ToolTimedOut(Exception):
    """The tool did not finish within its deadline (``blocking``: what the watchdog saw of
    it holding the event loop, if it did)."""

    def __init__(self, blocking: Blocking | None = None) -> None:
        super().__init__()
        self.blocking = blocking

    def result(self, tool: str, timeout: float) -> ToolResult:
        """The ``TIMEOUT`` result the model and the user see, naming a block of the loop."""
        blocking = self.blocking
        if blocking is None:
            return ToolResult.fail(
                f"{tool} did not finish within {timeout:g} s",
                "TIMEOUT",
                suggestion="try a narrower request",
            )
        return ToolResult.fail(
            f"{tool} did not finish within {timeout:g} s: it held the event loop for "
            f"{blocking.seconds * 1000:.0f} ms (blocking work inside 'async def'"
            + (f", in {blocking.function}" if blocking.function else "")
            + "); its later calls run in a thread of their own",
            "TIMEOUT",
            suggestion="try again: the tool no longer holds up the other calls",
        )


def safe_json(value: Any) -> str | None:
    """``value`` as JSON text, or ``None`` when it cannot be (circular, too deep, ...)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=safe_str)
    except (ValueError, TypeError, RecursionError, OverflowError):
        return None


def safe_result(result: ToolResult) -> ToolResult:
    """``result`` with data that can be serialised and text that is valid and capped."""
    data = result.data
    if data is None and result.error is None:  # the usual answer: a short ASCII text
        content = result.content
        if (
            type(content) is str
            and content.isascii()
            and "\x00" not in content
            and len(content) <= MAX_RESULT_CHARS
        ):
            return result  # (what clean_text leaves unchanged: no copy, ~2k instructions less)
    note = None
    if data is not None:
        text = safe_json(data)
        if text is None:
            data, note = None, "the tool's data could not be serialised and was dropped"
        elif len(text) > MAX_RESULT_CHARS:
            data, note = None, f"the tool's data ({len(text)} characters) was too large"
        elif has_unstorable_chars(text):
            data = json.loads(clean_text(text))
    content = clean_text(result.content or "", MAX_RESULT_CHARS)
    if note and not content and result.success:
        content = note
    error = clean_text(result.error, MAX_RESULT_CHARS) if result.error is not None else None
    if data is result.data and content == result.content and error == result.error:
        return result  # already safe: no copy
    return result.model_copy(update={"data": data, "content": content, "error": error})


def run_is_cancelled() -> bool:
    """Whether the task running the caller is itself being cancelled."""
    task = asyncio.current_task()
    return bool(task is not None and task.cancelling())


class ToolRun:
    """One handler started in its own task under a hard deadline (see the module
    docstring); :func:`await_tool_runs` waits for several at once, :meth:`outcome` reads
    the result."""

    __slots__ = ("began", "deadline", "finished", "gate", "started", "task", "timeout", "watched")

    def __init__(
        self,
        handler: Callable[..., Any],
        args: Any,
        ctx: Any,
        timeout: float,
        name: str = "tool",
        before: Callable[[], Any] | None = None,
    ) -> None:
        on_loop = False
        if not _is_async(handler):
            work: Any = asyncio.to_thread(_sync_call, handler, args, ctx)
        elif has_blocked(handler):
            work = run_in_own_thread(handler, args, ctx, name)
        else:
            work, on_loop = handler(args, ctx), True
        self.timeout = timeout
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.finished: float | None = None
        #: the batch gate counting this run down (told by :meth:`_ended`)
        self.gate: _BatchGate | None = None
        #: whether the task's coroutine has begun (else :meth:`cancel` reports its end)
        self.began = False
        self.task = asyncio.get_running_loop().create_task(self._contained(work, before))
        self.watched = watch(self.task, name, handler) if on_loop else None

    async def _contained(self, work: Any, before: Callable[[], Any] | None = None) -> Any:
        """Await ``work`` inside the tool's task so that exceptions the event loop would
        re-raise (``KeyboardInterrupt``, ``SystemExit``) or that mean "stop" elsewhere stay
        the tool's; the end is reported from inside the task (see :meth:`_ended`).
        ``before()`` is awaited first (a writing call's durable start): if it raises, the
        handler never runs."""
        self.began = True
        try:
            if before is not None:
                try:
                    await before()
                except BaseException:
                    close = getattr(work, "close", None)
                    if close is not None:  # the handler's coroutine, never started
                        close()
                    raise
            return await work
        except (GeneratorExit, KeyboardInterrupt, SystemExit) as exc:
            raise RuntimeError(f"the tool raised {type(exc).__name__}") from None
        finally:
            self._ended()

    def _ended(self) -> None:
        # Called from the tool's own task as its coroutine ends, one event-loop iteration
        # before a done callback would run: the waiting loop (or the next batch) goes on
        # that much sooner. A task cancelled before it started reports it through :meth:`cancel`.
        if self.finished is None:
            self.finished = time.monotonic()
            if self.watched is not None:
                self.watched.release()
            gate, self.gate = self.gate, None  # no cycle left for the collector
            if gate is not None:
                # (a closed loop, when a task is destroyed at shutdown, cannot schedule)
                with contextlib.suppress(RuntimeError):
                    gate.one_done()

    def _done(self, _task: asyncio.Future[Any]) -> None:
        self._ended()

    def cancel(self) -> None:
        """Cancel the handler's task. A task cancelled before its coroutine began never runs
        it, so its end is reported by a done callback, added then (not one per call: a
        callback is a turn of the event loop for every tool call)."""
        task = self.task
        if not self.began and not task.done():
            task.add_done_callback(self._done)
        task.cancel()

    def abandon(self) -> None:
        """Cancel the handler past its deadline and leave it behind (a tool swallowing the
        cancel cannot hold the run; a late failure is logged)."""
        task = self.task
        if not task.done() and not task.cancelling():
            self.cancel()
            task.add_done_callback(_forget)

    def outcome(self) -> Any:
        """The handler's value; raises :class:`ToolTimedOut`, the tool's exception, or
        ``RuntimeError`` for the ``BaseException`` kinds a tool must not propagate."""
        task = self.task
        if self.finished is None or self.finished - self.started > self.timeout:
            self.abandon()
            raise ToolTimedOut(self.watched.blocking if self.watched is not None else None)
        try:
            return task.result()
        except asyncio.CancelledError:
            raise RuntimeError("the tool raised CancelledError (cancelled from inside)") from None


async def await_tool_runs(runs: list[ToolRun], then: Callable[[], None] | None = None) -> None:
    """Wait until every run has finished or passed its deadline (one wait for a batch of
    concurrent calls); runs past their deadline are abandoned. ``then()`` is called the moment
    the batch is over (from inside the last run's task as it ends, in the waiting task's
    context), before the waiting task wakes: the next batch starts without waiting for this
    one's results to be handed out. When the caller
    is cancelled, the unfinished runs are cancelled and ``then`` is never called."""
    for r in runs:
        if r.finished is None:
            break
    else:  # every run has ended already (tools that answer at once): no gate to count down
        if then is not None:
            then()
            await asyncio.sleep(0)  # the batch ``then`` started begins before this one goes on
        return
    gate = _BatchGate(runs, then)
    opened_at_once = gate.future.done()  # every run had ended already
    try:
        await gate.future
        if opened_at_once and then is not None:
            await asyncio.sleep(0)  # the batch ``then`` started begins before this one goes on
    except asyncio.CancelledError:
        gate.close()
        for r in runs:
            r.cancel()
        raise


class _BatchGate:
    """Counts a batch's runs down (each run reports its end from inside its task, one timer
    for the earliest deadline) and opens once: the cheap equivalent of ``asyncio.wait`` in a
    loop, one event-loop iteration sooner."""

    __slots__ = ("context", "future", "left", "runs", "then", "timer")

    def __init__(self, runs: list[ToolRun], then: Callable[[], None] | None) -> None:
        loop = asyncio.get_running_loop()
        self.runs, self.then = runs, then
        self.future: asyncio.Future[None] = loop.create_future()
        self.timer: asyncio.TimerHandle | None = None
        #: the waiting task's context: ``then`` starts the next batch in it, not in the
        #: context of the tool whose end opened the gate
        self.context = contextvars.copy_context() if then is not None else None
        self.left = 0
        for r in runs:
            if r.finished is None:
                self.left += 1
                r.gate = self
        self._on_deadline()

    def one_done(self) -> None:
        """One run of the batch has ended (called from inside its task)."""
        self.left -= 1
        if self.left == 0:
            context, self.context = self.context, None
            if context is not None:
                context.run(self._open)
            else:
                self._open()

    def _on_deadline(self) -> None:
        """Abandon the runs past their deadline (answered ``TIMEOUT``, no longer counted:
        the batch does not wait for them) and wake again at the earliest deadline left."""
        now = time.monotonic()
        earliest = None  # (a loop, not a comprehension: a frame of its own on 3.11)
        for r in self.runs:
            if r.finished is not None:
                continue
            if now >= r.deadline:
                if r.gate is self:
                    r.gate = None
                    self.left -= 1
                    r.abandon()
            elif earliest is None or r.deadline < earliest:
                earliest = r.deadline
        if earliest is None:
            self._open()
        elif not self.future.done():
            loop = asyncio.get_running_loop()
            self.timer = loop.call_later(earliest - now, self._on_deadline)

    def _open(self) -> None:
        if self.future.done():
            return
        then = self.then
        self.close()
        for r in self.runs:
            if r.finished is None:
                r.abandon()
        if then is not None:
            try:
                then()
            except Exception as exc:  # the waiting task raises it (nothing is lost)
                self.future.set_exception(exc)
                return
        self.future.set_result(None)

    def close(self) -> None:
        """Stop the deadline timer; a gate closed by its waiter never calls ``then``."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.then = self.context = None
        for r in self.runs:
            r.gate = None


async def call_with_deadline(
    handler: Callable[..., Any], args: Any, ctx: Any, timeout: float
) -> Any:
    """``handler(args, ctx)`` under a hard deadline (see the module docstring); raises
    :class:`ToolTimedOut`, the tool's exception, or ``RuntimeError`` for the
    ``BaseException`` kinds a tool must not propagate."""
    run = ToolRun(handler, args, ctx, timeout, getattr(handler, "__name__", "tool"))
    await await_tool_runs([run])
    return run.outcome()


@functools.lru_cache(maxsize=4096)
def _async_handler(handler: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(handler)


def _is_async(handler: Callable[..., Any]) -> bool:
    try:
        return _async_handler(handler)
    except TypeError:  # an unhashable callable
        return inspect.iscoroutinefunction(handler)


def _sync_call(handler: Callable[..., Any], args: Any, ctx: Any) -> Any:
    value = handler(args, ctx)
    if inspect.isawaitable(value):
        raise TypeError("a synchronous handler returned an awaitable")
    return value


def _forget(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.info("a timed-out tool ended later with %r", task.exception())
