"""The table tools' result cache: 5 minutes per (feature, instance, tool, arguments), and
void as soon as the instance's data version changes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEFAULT_TTL_S = 300.0


@dataclass
class _Entry:
    version: str
    stored_at: float
    value: Any


class ResultCache:
    """A small in-process cache keyed by the canonical JSON of the call.

    ``clock`` is injectable so expiry can be tested without waiting.
    """

    def __init__(
        self,
        ttl_s: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = 2048,
    ) -> None:
        self.ttl_s = ttl_s
        self.clock = clock
        self.max_entries = max_entries
        self._entries: dict[str, _Entry] = {}
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(feature: str, instance: str, tool: str, arguments: dict[str, Any]) -> str:
        """The cache key of one call."""
        return json.dumps([feature, instance, tool, arguments], sort_keys=True, default=str)

    def get(self, key: str, version: str) -> Any | None:
        """The cached value if it is younger than the TTL and of the current data version."""
        entry = self._entries.get(key)
        if entry is None or entry.version != version or self.clock() - entry.stored_at > self.ttl_s:
            if entry is not None:
                del self._entries[key]
            self.misses += 1
            return None
        self.hits += 1
        return entry.value

    def put(self, key: str, version: str, value: Any) -> None:
        """Store ``value`` for ``key`` at ``version`` (oldest entry evicted when full)."""
        if len(self._entries) >= self.max_entries:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = _Entry(version, self.clock(), value)

    def invalidate(self, feature: str | None = None, instance: str | None = None) -> int:
        """Drop entries of one feature / instance (everything without arguments)."""
        prefix_parts = [p for p in (feature, instance) if p is not None]
        if not prefix_parts:
            n = len(self._entries)
            self._entries.clear()
            return n
        prefix = json.dumps(prefix_parts)[:-1] + ", "
        doomed = [k for k in self._entries if k.startswith(prefix)]
        for k in doomed:
            del self._entries[k]
        return len(doomed)
