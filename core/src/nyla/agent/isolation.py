"""Running an ``async def`` tool in a thread of its own, for tools that block the event loop.

A tool the watchdog (:mod:`nyla.agent.loop_watch`) has seen holding the loop runs its later
calls here: a daemon thread with an event loop of its own runs the handler, so blocking work
inside it stalls only that thread, and the caller's deadline stays live (past it the thread's
task is cancelled and the thread left to end on its own).

The kernel's services are bound to the caller's loop (database pools, HTTP clients), so the
tool gets its :class:`~nyla.models.tools.ToolContext` with ``services`` behind a
:class:`LoopBridge`: every coroutine or async iterator a service hands out is run on the
caller's loop and its result brought back. Costs reported with ``ctx.charge`` reach the run
on the caller's loop, before the tool's result does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic import BaseModel

#: values handed out as they are (data, not services bound to a loop)
_PLAIN = (str, bytes, bytearray, int, float, bool, list, tuple, dict, set, frozenset, BaseModel)


async def run_in_own_thread(
    handler: Callable[..., Any], args: Any, ctx: Any, name: str = "tool"
) -> Any:
    """``await handler(args, ctx)`` on an event loop in a new daemon thread; cancelling the
    caller cancels the handler's task there."""
    home = asyncio.get_running_loop()
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()
    started = threading.Event()
    holder: dict[str, Any] = {}

    async def main() -> Any:
        holder["loop"] = asyncio.get_running_loop()
        holder["task"] = asyncio.current_task()
        started.set()
        return await handler(args, bridged_context(ctx, home))

    def target() -> None:
        try:
            done.set_result(asyncio.run(main()))
        except BaseException as exc:  # the caller's future carries every outcome
            if not done.cancelled():
                done.set_exception(exc)
        finally:
            started.set()

    threading.Thread(target=target, name=f"nyla-tool-{name}", daemon=True).start()
    try:
        return await asyncio.wrap_future(done)
    except asyncio.CancelledError:
        await asyncio.to_thread(started.wait, 1.0)
        loop, task = holder.get("loop"), holder.get("task")
        if loop is not None and task is not None and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)
        raise


def bridged_context(ctx: Any, home: asyncio.AbstractEventLoop) -> Any:
    """``ctx`` for a handler on another loop: ``services`` bridged to ``home``, charges
    reported on ``home``."""
    if not isinstance(ctx, BaseModel):
        return ctx
    update: dict[str, Any] = {}
    services = getattr(ctx, "services", None)
    if services is not None:
        update["services"] = LoopBridge(services, home)
    on_charge = getattr(ctx, "on_charge", None)
    if on_charge is not None:
        update["on_charge"] = lambda chf: home.call_soon_threadsafe(on_charge, chf)
    return ctx.model_copy(update=update) if update else ctx


class LoopBridge:
    """A stand-in for an object whose coroutines must run on ``home`` (another thread's loop):
    attributes that are services are bridged in turn, coroutines and async iterators their
    methods return are run on ``home``, data is handed out as it is."""

    __slots__ = ("_home", "_target")

    def __init__(self, target: Any, home: asyncio.AbstractEventLoop) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_home", home)

    def __getattr__(self, name: str) -> Any:
        return _bridge(getattr(self._target, name), self._home)

    def __repr__(self) -> str:
        return f"LoopBridge({self._target!r})"

    async def __aenter__(self) -> Any:
        return _bridge(await _on_home(_enter(self._target), self._home), self._home)

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await _on_home(_exit(self._target, exc_info), self._home)

    def __aiter__(self) -> AsyncIterator[Any]:
        return _iterate_on_home(self._target.__aiter__(), self._home)


def _bridge(value: Any, home: asyncio.AbstractEventLoop) -> Any:
    if value is None or isinstance(value, _PLAIN) or inspect.isclass(value):
        return value
    if inspect.iscoroutine(value):
        return _on_home(value, home)
    if inspect.isasyncgen(value) or isinstance(value, AsyncIterator):
        return _iterate_on_home(value, home)
    if hasattr(type(value), "__aenter__") or hasattr(type(value), "__aiter__"):
        return LoopBridge(value, home)  # (some context managers are callable too)
    if callable(value):
        return _BridgedCallable(value, home)
    if _is_bound_to_a_loop(value):
        return LoopBridge(value, home)
    return value


def _is_bound_to_a_loop(value: Any) -> bool:
    """Whether ``value`` is an object with async methods or context (a service, a session),
    not plain data."""
    return inspect.ismodule(value) or _has_async_members(type(value))


def _has_async_members(kind: type) -> bool:
    known = _ASYNC_KINDS.get(kind)
    if known is None:
        known = _ASYNC_KINDS[kind] = any(
            inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member)
            for klass in kind.__mro__[:-1]
            for name, member in vars(klass).items()
            if not name.startswith("__")
        )
    return known


#: whether a type has async methods, by type (types are few; their answers never change)
_ASYNC_KINDS: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


class _BridgedCallable:
    __slots__ = ("_function", "_home")

    def __init__(self, function: Callable[..., Any], home: asyncio.AbstractEventLoop) -> None:
        self._function, self._home = function, home

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _bridge(self._function(*args, **kwargs), self._home)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._function, name)


async def _on_home(coroutine: Any, home: asyncio.AbstractEventLoop) -> Any:
    """``coroutine`` run on ``home``; what it returns comes back bridged (a session or a
    stream it opens is still bound to ``home``)."""
    future = asyncio.run_coroutine_threadsafe(coroutine, home)
    try:
        return _bridge(await asyncio.wrap_future(future), home)
    except asyncio.CancelledError:
        future.cancel()
        raise


async def _enter(target: Any) -> Any:
    return await target.__aenter__()


async def _exit(target: Any, exc_info: tuple[Any, ...]) -> Any:
    return await target.__aexit__(*exc_info)


async def _next(iterator: Any) -> Any:
    return await iterator.__anext__()


async def _iterate_on_home(iterator: Any, home: asyncio.AbstractEventLoop) -> AsyncIterator[Any]:
    try:
        while True:
            try:
                yield await _on_home(_next(iterator), home)
            except StopAsyncIteration:
                return
    finally:
        closing = getattr(iterator, "aclose", None)
        if closing is not None:
            await _on_home(closing(), home)
