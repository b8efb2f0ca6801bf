"""CPU-heavy work kept off the event loop.

Neutralizing a long prompt, extracting a document and chunking it are pure Python work that
holds the interpreter for as long as it runs; on the event loop that stalls every other
request of the server (issue 27: one 24,000-character prompt froze ``/healthz`` for all
clients). Large inputs therefore run in a worker thread, where the loop keeps serving while
they run. Small ones stay inline: the hop to a thread costs more than they do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

#: characters of input from which work goes to a worker thread
OFFLOAD_CHARS = 16_000


async def off_loop(size: int, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` for an input of ``size`` characters: in a worker thread from
    :data:`OFFLOAD_CHARS` on, inline below."""
    if size < OFFLOAD_CHARS:
        return fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)
