"""The local provider's float32 vectors (``embed_float32``, how the AI service takes vectors
it stores as float4): the values ``embed`` gives, as float4 rounds them, for every local
model; and a batch's vectors are each text's own, bit for bit."""

from __future__ import annotations

import struct
from array import array

import pytest

import nyla_provider_local
from nyla.sdk import ModelNotAvailableError
from nyla_provider_local import LocalProvider, static_model

TEXTS = [
    "read_a: read 1 ok\nread_b: read 2 ok\nread_c: read 3 ok\nwrite_d: write 1 ok",
    "",
    "Die Rechnung 2024-17 ist überfällig, bitte bis Ende Monat bezahlen.",
    " ".join(f"word{i} and some more words of a long text" for i in range(60)),
    "x",
]

static = pytest.mark.skipif(
    static_model.missing_reason() is not None, reason=str(static_model.missing_reason())
)


def float4(values: list[float]) -> bytes:
    return struct.pack(f"={len(values)}f", *values)


@pytest.mark.parametrize(
    "model", [pytest.param("local:wordllama-l2-256", marks=static), "local:hash-64"]
)
async def test_float32_values_are_the_vectors_of_embed(model: str) -> None:
    provider = LocalProvider()
    listed = await provider.embed(model, TEXTS)
    data, dims, usage = await provider.embed_float32(model, TEXTS)
    assert dims == listed.dimensions and usage.total_tokens == 0
    assert data == b"".join(float4(v) for v in listed.vectors)


async def test_an_unknown_model_is_refused_as_by_embed() -> None:
    provider = LocalProvider()
    for call in (provider.embed, provider.embed_float32):
        with pytest.raises(ModelNotAvailableError):
            await call("local:nope", TEXTS)


@static
def test_a_batch_embeds_each_text_as_it_would_alone() -> None:
    # the rows of a batch are taken at once; each text's sum must still round as its own
    texts = TEXTS + [f"{t} {i}" for i, t in enumerate(TEXTS * 3)]
    import numpy as np

    tokens, table = static_model._load()
    batch = static_model.embed_matrix(texts)
    for row, text in zip(batch, texts, strict=True):
        assert row.tobytes() == static_model.embed_matrix([text])[0].tobytes()
        ids = np.frombuffer(tokens.encode(text), dtype=np.int32)
        alone = table.take(ids).sum(axis=0) if ids.size else np.zeros(256, np.float32)
        norm = np.linalg.norm(alone[None, :], axis=1, keepdims=True)[0]
        assert row.tobytes() == (alone / np.where(norm == 0, 1.0, norm)).tobytes()
    assert static_model.embed_texts(texts) == batch.tolist()


async def test_rows_through_the_service_are_stored_as_embed_would(make_kernel, db) -> None:
    kernel = make_kernel(nyla_provider_local, db=db, builtins=False)
    model = LocalProvider().hash_model_id
    listed = await kernel.ai.embed(TEXTS, model=model)
    used, rows = await kernel.ai.embed_rows(TEXTS, model=model)
    assert used == listed.model
    assert all(type(r) is array for r in rows)
    assert [r.tobytes() for r in rows] == [float4(v) for v in listed.vectors]
    totals = kernel.ai.totals()
    assert totals.calls == 2 and totals.input_tokens == 2 * listed.usage.input_tokens
