"""A bulk load's texts do not stay alive in the token counter's memo: the local embedder
counts the texts it embeds once, unmemoized (a 10,000-note load otherwise kept thousands of
chunk texts, and their UTF-8 copies, until the memo's 8,192 entries were full)."""

from __future__ import annotations

from nyla.ai.tokens import _count_short, count_text_tokens
from nyla_provider_local import LocalProvider


async def test_the_local_embedder_counts_its_texts_without_entering_the_token_memo():
    texts = ["Anna Keller met Marco Rossi in Basel to discuss the budget.", "Zweiter Text"]
    expected = sum(count_text_tokens(t) for t in texts)
    _count_short.cache_clear()
    response = await LocalProvider().embed("local:hash-384", texts)
    assert len(response.vectors) == 2
    assert response.usage.input_tokens == expected
    assert _count_short.cache_info().currsize == 0
