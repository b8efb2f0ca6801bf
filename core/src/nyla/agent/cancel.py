"""Cancelling a run: the caller sets an :class:`asyncio.Event`; every wait of the loop
(model call, tool batch, knowledge context, round recorder) races against it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


class RunCancelled(Exception):
    """The caller cancelled the run (raised inside the loop, never out of it)."""


async def race(awaitable: Awaitable[Any], cancel: asyncio.Event | None) -> Any:
    """Await ``awaitable`` unless ``cancel`` is set first (then cancel it and raise
    :class:`RunCancelled`)."""
    if cancel is None:
        return await awaitable
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
