"""The static model's grouped sums (``embed_matrix`` sums the texts of one token count as one
block): each text's vector is still the sum of its rows added one after the other, as
``sum(axis=0)`` of that text alone gives it, bit for bit."""

from __future__ import annotations

import pytest

from nyla_provider_local import provider as local_provider
from nyla_provider_local import static_model

pytestmark = pytest.mark.skipif(
    static_model.missing_reason() is not None, reason=str(static_model.missing_reason())
)

#: several texts per token count (a run's round summaries), others alone, and empty ones
TEXTS = [
    *(f"read_a: read {i} ok\nread_b: read {i + 1} ok\nwrite_d: write {i} ok" for i in range(9)),
    "",
    *(f"Rechnung {i} ist bezahlt." for i in range(5)),
    "x",
    "",
    " ".join(f"word{i} and some more words of a long text" for i in range(40)),
    *(f"Die Rechnung 2024-{i} ist überfällig, bitte bis Ende Monat bezahlen." for i in range(4)),
]


def test_each_row_is_its_texts_rows_added_in_order() -> None:
    import numpy as np

    tokens, table = static_model._load()
    counts = [len(tokens.encode(t)) >> 2 for t in TEXTS]
    # the batch has groups of texts with one count, and counts seen once
    assert max(counts.count(c) for c in set(counts)) >= 4 and 1 in map(counts.count, counts)
    batch = static_model.embed_matrix(TEXTS)
    assert batch.shape == (len(TEXTS), static_model.DIMENSIONS) and batch.dtype == np.float32
    for row, text in zip(batch, TEXTS, strict=True):
        ids = np.frombuffer(tokens.encode(text), dtype=np.int32)
        total = np.zeros(static_model.DIMENSIONS, np.float32)
        if ids.size:
            rows = table.take(ids)
            total = rows[0].copy()
            for other in rows[1:]:  # one after the other, as numpy's sum(axis=0) adds them
                total += other
            assert total.tobytes() == rows.sum(axis=0).tobytes()
        norm = np.linalg.norm(total[None, :], axis=1, keepdims=True)[0]
        assert row.tobytes() == (total / np.where(norm == 0, 1.0, norm)).tobytes()
        assert row.tobytes() == static_model.embed_matrix([text])[0].tobytes()


async def test_a_runs_round_summaries_are_embedded_on_the_loop(monkeypatch) -> None:
    provider = local_provider.LocalProvider()
    summaries = [TEXTS[i % 9] for i in range(40)]
    threaded = await provider.embed_float32("local:wordllama-l2-256", summaries[:1])
    assert static_model.loaded() and threaded[1] == static_model.DIMENSIONS

    def no_thread(*args: object, **kwargs: object) -> None:
        raise AssertionError("a thread was started for a run's round summaries")

    monkeypatch.setattr(local_provider.asyncio, "to_thread", no_thread)
    data, dims, _usage = await provider.embed_float32("local:wordllama-l2-256", summaries)
    assert data == static_model.embed_matrix(summaries).tobytes() and dims == 256
    with pytest.raises(AssertionError, match="thread"):
        await provider.embed_float32("local:wordllama-l2-256", ["a b c " * 1400])
