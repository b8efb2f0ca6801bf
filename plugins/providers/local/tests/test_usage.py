"""Embedding usage: the local provider reports none, the AI service counts the texts it sends
once and that count is what a call's usage and the ledger see."""

from __future__ import annotations

import nyla_provider_local
from nyla.sdk import count_text_tokens_once
from nyla_provider_local import LocalProvider

TEXTS = ["result: read 3 ok", "Die Rechnung 2024-17 ist überfällig.", "x" * 40]


async def test_the_provider_reports_no_usage_of_its_own() -> None:
    provider = LocalProvider()
    result = await provider.embed(provider.hash_model_id, TEXTS)
    assert len(result.vectors) == len(TEXTS)
    assert result.usage.total_tokens == 0


async def test_an_embedding_through_the_service_counts_each_text_once(make_kernel, db) -> None:
    kernel = make_kernel(nyla_provider_local, db=db, builtins=False)
    response = await kernel.ai.embed(TEXTS, model=LocalProvider().hash_model_id)
    expected = sum(count_text_tokens_once(t) for t in TEXTS)
    assert expected > len(TEXTS)
    assert response.usage.input_tokens == expected
    assert response.usage.output_tokens == 0
