"""The progress bar of ``nyla sync run`` (rich): items seen, pages, indexed so far."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def progress_bar(
    *, enabled: bool = True
) -> Iterator[Callable[[int, int | None, str], None] | None]:
    """Yields the ``on_progress(done, total, message)`` callback (``None`` when disabled)."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed} items"),
        TimeElapsedColumn(),
        transient=False,
    ) as bar:
        task = bar.add_task("sync", total=None)

        def update(done: int, total: int | None, message: str) -> None:
            bar.update(task, completed=done, total=total, description=f"sync {message}")

        yield update


class _Reporting:
    """A job handle that also reports progress to a callback."""

    def __init__(self, handle: Any, on_progress: Callable[[int, int | None, str], None]) -> None:
        self._handle = handle
        self._on_progress = on_progress

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    async def progress(self, done: int, total: int | None = None, message: str = "") -> None:
        await self._handle.progress(done, total, message)
        self._on_progress(done, total, message)


def with_callback(handle: Any, on_progress: Callable[[int, int | None, str], None] | None) -> Any:
    """``handle`` whose progress also goes to ``on_progress``."""
    return handle if on_progress is None else _Reporting(handle, on_progress)
