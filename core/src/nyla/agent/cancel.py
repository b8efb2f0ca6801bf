"""Cancelling a run: the caller sets an :class:`asyncio.Event`; every wait of the loop
(model call, tool batch, knowledge context, round recorder) ends when it is set.

:class:`CancelScope` is how a run waits: one watcher task per run, and setting the event
cancels the wait in progress the way ``asyncio.timeout`` does (the waiting task is cancelled
and the cancel is turned into :class:`RunCancelled`), so a wait costs no task of its own.
:func:`race` is the general form for a bare event (two tasks per wait)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


class RunCancelled(Exception):
    """The caller cancelled the run (raised inside the loop, never out of it)."""


class CancelScope:
    """A run's cancellation by the caller's ``event``: :meth:`wait` awaits work in the
    current task; setting the event while it waits cancels that task and the wait raises
    :class:`RunCancelled`. A cancel of the task from elsewhere stays a cancel. Between waits
    the run asks :meth:`is_set`. :meth:`close` stops the watcher when the run ends."""

    __slots__ = ("_fired", "_task", "_watcher", "event")

    def __init__(self, event: asyncio.Event) -> None:
        self.event = event
        self._task: asyncio.Task[Any] | None = None
        self._fired = False
        self._watcher: asyncio.Task[None] | None = None

    def is_set(self) -> bool:
        """Whether the caller has cancelled the run."""
        return self.event.is_set()

    async def _watch(self) -> None:
        await self.event.wait()
        task = self._task
        if task is not None and not task.done():
            self._fired = True
            task.cancel()

    def close(self) -> None:
        """Stop watching (the run has ended)."""
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None

    async def wait(self, awaitable: Awaitable[Any]) -> Any:
        """Await ``awaitable`` unless the run is cancelled first (then it is cancelled and
        :class:`RunCancelled` raised)."""
        if self.event.is_set():
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise RunCancelled
        task = asyncio.current_task()
        if self._task is not None or task is None:  # a wait inside a wait, or another task's
            return await race(awaitable, self.event)
        if self._watcher is None:
            self._watcher = asyncio.ensure_future(self._watch())
        self._task = task
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self._fired:
                self._fired = False
                if task.uncancel() == 0:  # ours alone: the run was cancelled
                    raise RunCancelled from None
            raise
        finally:
            self._task = None
            if self._fired:  # fired as the work ended: take the cancel back, it is too late
                self._fired = False
                task.uncancel()


async def race(awaitable: Awaitable[Any], cancel: asyncio.Event | CancelScope | None) -> Any:
    """Await ``awaitable`` unless ``cancel`` is set first (then cancel it and raise
    :class:`RunCancelled`)."""
    if cancel is None:
        return await awaitable
    if isinstance(cancel, CancelScope):
        return await cancel.wait(awaitable)
    if cancel.is_set():
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise RunCancelled
    task = asyncio.ensure_future(awaitable)
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        waiter.cancel()
    if task in done:
        return task.result()
    task.cancel()
    await asyncio.wait({task})  # let the cancelled work unwind; its outcome no longer matters
    raise RunCancelled
