"""Round memory through a provider that hands its vectors as float32 (``embed_float32``, as
the local model does): each row stores what the vector's float4 rounding is, bit for bit, a
recurring summary's vector in each of its rows, every summary through the privacy gate."""

from __future__ import annotations

import struct
from array import array
from typing import Any

import pytest
from sqlalchemy import select

from nyla.knowledge.memory import round_row
from nyla.knowledge.vectors import vector_binary
from nyla.models.agent import RoundToolResult
from nyla.models.ai import Usage
from nyla.tables.knowledge import RoundMemory
from nyla.testing.scripted import ScriptedProvider

from .conftest import DIMS, NeutralizerPlugin, ctx, hash_embed


class Float32Provider(ScriptedProvider):
    """The scripted embedder whose vectors also come as float32 bytes."""

    def __init__(self) -> None:
        super().__init__(lambda r, i: "ok", embed_fn=hash_embed)
        self.seen: list[str] = []

    async def embed_float32(self, model: str, texts: list[str]) -> Any:
        self.seen.extend(texts)
        flat = [x for v in hash_embed(texts) for x in v]
        return array("f", flat).tobytes(), DIMS, Usage()


def float4(vector: Any) -> bytes:
    return struct.pack(f"{len(vector)}f", *vector)


@pytest.mark.db
async def test_float32_vectors_are_stored_as_float4_of_the_lists(db, make_kernel) -> None:
    provider = Float32Provider()
    kernel = make_kernel(provider, NeutralizerPlugin(), db=db, builtins=False)
    me = ctx("u1", "m1")
    buffer = kernel.knowledge.round_recorder(me)
    results = [
        [RoundToolResult("poll", True, "still running")],
        [RoundToolResult("poll", True, "still running")],
        [RoundToolResult("mail", True, "sent to bob@example.com"), RoundToolResult("x", False, "")],
    ]
    for n, tool_results in enumerate(results, 1):
        await buffer(run_id="r", round=n, context=me, tool_results=tool_results)
    await buffer.flush()
    async with kernel.db.session() as s:
        rows = (await s.execute(select(RoundMemory).order_by(RoundMemory.round))).scalars().all()
    assert len(provider.seen) == 2  # the recurring summary once
    assert "bob@example.com" not in provider.seen[1]
    expected = [float4(v) for v in hash_embed(provider.seen)]
    assert [float4(r.embedding) for r in rows] == [expected[0], expected[0], expected[1]]
    assert all(r.embedding_model == provider.spec.id for r in rows)


def test_a_rows_float32_vector_is_packed_as_its_list_is() -> None:
    vector = hash_embed(["some words to embed"])[0]
    rows = [
        round_row(
            run_id="r",
            round=1,
            context=ctx(),
            file_refs=[],
            tool_results=[],
            decisions=[],
            summary="s",
            model="m",
            vector=v,
        )
        for v in (vector, array("f", vector))
    ]
    assert vector_binary(rows[0]["embedding"]) == vector_binary(rows[1]["embedding"])
