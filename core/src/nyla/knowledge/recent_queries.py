"""The query vectors a reader searched a scope with lately, kept in process memory only.

A scope's ``ef_search`` (:mod:`nyla.knowledge.search_calibration`) is best learned from
queries like the ones its reader asks: a scope's own chunks are easy queries (the graph
holds them), and where no ef reaches the target recall they cannot tell how much of the
plateau a reader's searches need. So the retrieval notes the vector of every search of a
scope whose ef is learned, in a bounded ring per reader key (the scope key of
:func:`~nyla.knowledge.search_plan.plan_search`, which holds the reader's id and the owner
keys it reads): never written anywhere, never read for another reader's key, gone with the
process."""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Hashable, Sequence

#: the most recent queries kept per reader key, and how many a measurement needs: where
#: recall creeps on along a plateau, a smaller sample tells fewer hard queries apart
#: (simulated on 200 of bench/retrieval_latency.py's 1M queries measured at 20 ef: 64
#: queries learned efs whose recall on the other queries was 0.0105 below the best ef's
#: on average, 100 queries 0.004)
QUERIES = 100
#: reader keys with a ring (the one noted least recently goes first): 32 x 100 vectors of
#: 384 dimensions are 4.7 MiB, of 1,536 dimensions 19 MiB
READERS = 32


class RecentQueries:
    """Bounded rings of recent query vectors, one per reader key (see the module)."""

    def __init__(self, queries: int = QUERIES, readers: int = READERS) -> None:
        self.queries = queries
        self.readers = readers
        self._rings: dict[Hashable, deque[bytes]] = {}

    def note(self, key: Hashable, vector: Sequence[float]) -> int:
        """Keep ``vector`` (copied, packed in single precision: 3.7 µs for 384 floats,
        an ``array`` took 12) as the newest query of ``key``; returns how many that ring
        holds now (at most :attr:`queries`)."""
        ring = self._rings.pop(key, None)
        if ring is None:
            ring = deque(maxlen=self.queries)
            if len(self._rings) >= self.readers:
                del self._rings[next(iter(self._rings))]
        self._rings[key] = ring  # the most recently noted last
        ring.append(struct.pack(f"{len(vector)}f", *vector))
        return len(ring)

    def count(self, key: Hashable) -> int:
        """How many queries ``key``'s ring holds."""
        ring = self._rings.get(key)
        return 0 if ring is None else len(ring)

    def full(self, key: Hashable) -> list[tuple[float, ...]] | None:
        """``key``'s queries, oldest first, once it holds :attr:`queries` of them
        (``None`` before: too few to measure with)."""
        ring = self._rings.get(key)
        if ring is None or len(ring) < self.queries:
            return None
        return [struct.unpack(f"{len(packed) // 4}f", packed) for packed in ring]
