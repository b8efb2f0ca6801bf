"""Rate budgets and concurrency caps shared by the vendor HTTP clients of one process.

A :class:`RateBudget` allows ``requests`` per ``window_s`` for one vendor key and slows
down *before* the vendor would throttle: once ``slow_down_at`` of the window's budget is
used, the remaining requests are spread evenly over what is left of the window instead of
being fired at once and answered with 429. :class:`Limiter` holds one budget per vendor key
and one semaphore per account (the per-account concurrency cap).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]


@dataclass
class RateBudget:
    """``requests`` per ``window_s`` seconds, paced from ``slow_down_at`` of the budget on."""

    requests: int
    window_s: float
    slow_down_at: float = 0.8
    clock: Clock = time.monotonic
    sleep: Sleep = asyncio.sleep
    _sent: deque[float] = field(default_factory=deque)
    _last: float | None = None
    waited_s: float = 0.0

    def _trim(self, now: float) -> None:
        while self._sent and self._sent[0] <= now - self.window_s:
            self._sent.popleft()

    @property
    def remaining(self) -> int:
        """Requests left in the current window."""
        self._trim(self.clock())
        return max(0, self.requests - len(self._sent))

    def delay(self) -> float:
        """Seconds to wait before the next request may go out (0 when it may go now)."""
        now = self.clock()
        self._trim(now)
        used = len(self._sent)
        if used >= self.requests:
            return self._sent[0] + self.window_s - now
        if used < self.requests * self.slow_down_at or self._last is None:
            return 0.0
        reset_in = (self._sent[0] + self.window_s - now) if self._sent else 0.0
        gap = reset_in / (self.requests - used + 1)
        return max(0.0, self._last + gap - now)

    async def acquire(self) -> None:
        """Wait until a request fits the budget, then count it."""
        while (wait := self.delay()) > 0:
            self.waited_s += wait
            await self.sleep(wait)
        now = self.clock()
        self._sent.append(now)
        self._last = now

    def observe(self, remaining: int | None, reset_in_s: float | None = None) -> None:
        """Take the vendor's own count of requests left (``X-RateLimit-Remaining``) when it is
        lower than ours: another process or app shares the budget. With ``reset_in_s`` (the
        vendor's reset header) the vendor's window replaces ours: the budget is full again
        when the vendor says, not a whole window of ours later."""
        if remaining is None:
            return
        now = self.clock()
        self._trim(now)
        if reset_in_s is not None:
            used = max(0, self.requests - max(0, remaining))
            expires = now + min(reset_in_s, self.window_s) - self.window_s
            self._sent = deque([expires] * used)
            return
        while self.requests - len(self._sent) > max(0, remaining):
            self._sent.append(now)


@dataclass
class Limiter:
    """Per-account concurrency caps and per-vendor rate budgets of one process."""

    clock: Clock = time.monotonic
    sleep: Sleep = asyncio.sleep
    _semaphores: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    _budgets: dict[str, RateBudget] = field(default_factory=dict)

    def semaphore(self, account_key: str, cap: int) -> asyncio.Semaphore:
        """The semaphore capping concurrent requests of one account."""
        if account_key not in self._semaphores:
            self._semaphores[account_key] = asyncio.Semaphore(max(1, cap))
        return self._semaphores[account_key]

    def budget(
        self, vendor_key: str, requests: int | None, window_s: float, slow_down_at: float
    ) -> RateBudget | None:
        """The rate budget of a vendor key (``None`` when the vendor has none configured)."""
        if not requests:
            return None
        if vendor_key not in self._budgets:
            self._budgets[vendor_key] = RateBudget(
                requests, window_s, slow_down_at, clock=self.clock, sleep=self.sleep
            )
        return self._budgets[vendor_key]
