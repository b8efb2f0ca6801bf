"""The vectors one batch of indexed files shares: a chunk whose content an earlier file of
the batch already embedded reuses that vector (a bulk load's lookup rows, which find indexed
content, are written only after the batch)."""

from __future__ import annotations

from collections.abc import Sequence

#: (owner key, model, content hash) -> vector, shared by the files of one batch
Memo = dict[tuple[str, str, str], Sequence[float]]
#: content hash -> vector, of one file's chunks
Vectors = dict[str, Sequence[float]]

#: vectors a batch's memo keeps for its later files (a bulk load's lookup rows, which find
#: indexed content, come after the batch): the most recently used ones, so a run's memory does
#: not grow with its files (about 1.4 MB at 256 dimensions); content recurring after this many
#: other chunks is embedded again
MEMO_VECTORS = 1024


def remember(memo: Memo, key: tuple[str, str, str], vector: Sequence[float]) -> None:
    """Keep ``vector`` in ``memo`` as the most recent entry, dropping the least recent ones
    beyond :data:`MEMO_VECTORS`."""
    memo.pop(key, None)
    memo[key] = vector
    while len(memo) > MEMO_VECTORS:
        del memo[next(iter(memo))]
