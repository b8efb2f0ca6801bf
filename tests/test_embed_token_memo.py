"""A bulk load's texts do not stay alive in the token counter's memo: an embedding is counted
once, unmemoized, by the AI service (a 10,000-note load otherwise kept thousands of chunk
texts, and their UTF-8 copies, until the memo's 8,192 entries were full). The local provider
counts nothing itself, so nothing else enters the memo on the way."""

from __future__ import annotations

import nyla_provider_local
from nyla.ai.tokens import _count_short, count_text_tokens
from nyla_provider_local import LocalProvider


async def test_an_embedding_is_counted_without_entering_the_token_memo(make_kernel, db):
    texts = ["Anna Keller met Marco Rossi in Basel to discuss the budget.", "Zweiter Text"]
    expected = sum(count_text_tokens(t) for t in texts)
    kernel = make_kernel(nyla_provider_local, db=db, builtins=False)
    _count_short.cache_clear()
    response = await kernel.ai.embed(texts, model=LocalProvider().hash_model_id)
    assert len(response.vectors) == 2
    assert response.usage.input_tokens == expected
    assert _count_short.cache_info().currsize == 0
