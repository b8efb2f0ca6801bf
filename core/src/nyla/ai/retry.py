"""Retries with jittered exponential backoff that honour ``Retry-After``."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from nyla.errors import ProviderError

T = TypeVar("T")


@dataclass
class RetryPolicy:
    """How often and how long to wait between attempts of one provider call.

    The n-th retry waits a random time in ``[0, min(max_delay_s, base_delay_s * 2**n)]``
    ("full jitter"); a ``Retry-After`` the provider sent is honoured instead (plus a little
    jitter) as long as it is at most ``max_retry_after_s`` — a longer one gives up on this
    model at once so the service can fall back. ``sleep`` is injectable for tests.
    """

    max_attempts: int = 3
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    max_retry_after_s: float = 60.0
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep)
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int, error: ProviderError) -> float | None:
        """Seconds to wait before retry number ``attempt`` (1-based), or ``None`` to stop."""
        if not error.retryable or attempt >= self.max_attempts:
            return None
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            if retry_after > self.max_retry_after_s:
                return None
            return retry_after + self.rng.uniform(0, min(1.0, self.base_delay_s))
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        return self.rng.uniform(0, ceiling)

    async def run(
        self,
        call: Callable[[], Awaitable[T]],
        on_retry: Callable[[int, ProviderError, float], None] | None = None,
    ) -> T:
        """Run ``call`` until it succeeds, a non-retryable error occurs, or attempts run out
        (then the last error is raised)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await call()
            except ProviderError as exc:
                wait = self.delay(attempt, exc)
                if wait is None:
                    raise
                if on_retry is not None:
                    on_retry(attempt, exc, wait)
                await self.sleep(wait)
