"""The hashing embedder: deterministic, normalized, configurable, semantically useful at the
level of shared words and word pieces, and fully offline."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from nyla.sdk import ConfigurationError, ModelNotAvailableError
from nyla_provider_local import LocalProvider
from nyla_provider_local.hashing import embed_text, embed_texts


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_are_l2_normalized_with_the_default_dimension() -> None:
    vector = embed_text("Die Rechnung ist überfällig.")
    assert len(vector) == 384
    assert math.sqrt(sum(v * v for v in vector)) == pytest.approx(1.0)


def test_empty_text_is_the_zero_vector() -> None:
    assert embed_text("  ... ") == [0.0] * 384


def test_stable_across_processes() -> None:
    """BLAKE2b, not ``hash()``: the same text gives the same vector in another interpreter
    (whose hash seed differs)."""
    code = (
        "from nyla_provider_local.hashing import embed_text;"
        "print(repr(embed_text('invoice 2024-17 overdue', 64)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert eval(out.stdout) == embed_text("invoice 2024-17 overdue", 64)


def test_related_texts_are_closer_than_unrelated_ones() -> None:
    query, related, unrelated = embed_texts(
        ["overdue invoices of Müller AG", "Müller AG invoice is overdue", "the cat sat on the mat"]
    )
    assert cosine(query, related) > 0.5 > cosine(query, unrelated) + 0.3


def test_word_pieces_match_inflections() -> None:
    base = embed_text("Rechnungen")
    assert cosine(base, embed_text("Rechnung")) > cosine(base, embed_text("Lieferung"))


async def test_dimension_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NYLA_LOCAL_EMBED_DIMENSIONS", "128")
    provider = LocalProvider()
    spec = provider.models()[0]
    assert spec.id == "local:hash-128" and spec.capabilities.embedding_dimensions == 128
    result = await provider.embed(spec.id, ["a b c"])
    assert result.dimensions == 128 and len(result.vectors[0]) == 128
    monkeypatch.setenv("NYLA_LOCAL_EMBED_DIMENSIONS", "lots")
    with pytest.raises(ConfigurationError, match="NYLA_LOCAL_EMBED_DIMENSIONS"):
        LocalProvider().models()


def test_minilm_is_listed_with_the_reason_when_the_extra_is_missing() -> None:
    from nyla_provider_local import minilm

    spec = LocalProvider().models()[1]
    assert spec.id == "local:all-minilm-l6-v2"
    assert spec.available is (minilm.missing_reason() is None)
    if not spec.available:
        assert "nyla-provider-local[minilm]" in spec.unavailable_reason


async def test_minilm_without_extra_raises_a_clear_error() -> None:
    from nyla_provider_local import minilm

    if minilm.missing_reason() is None:
        pytest.skip("the [minilm] extra is installed here")
    with pytest.raises(ModelNotAvailableError, match=r"\[minilm\]"):
        await LocalProvider().embed("local:all-minilm-l6-v2", ["x"])


async def test_big_batches_match_small_ones() -> None:
    provider = LocalProvider()
    texts = [f"Beleg {i} der Treuhand" for i in range(40)]  # > 32: computed off the loop
    many = await provider.embed("local:hash-384", texts)
    one = await provider.embed("local:hash-384", [texts[17]])
    assert many.vectors[17] == one.vectors[0]


async def test_minilm_glue_runs_the_model_off_the_event_loop(monkeypatch) -> None:
    """With the extra present, texts go to the sentence-transformers model, normalized, in a
    worker thread (the model itself is stood in for: torch is not installed by default)."""
    import threading

    from nyla_provider_local import minilm

    calls: list[tuple[list[str], bool, str]] = []

    class Encoder:
        def encode(self, texts, normalize_embeddings, convert_to_numpy):
            calls.append((list(texts), normalize_embeddings, threading.current_thread().name))
            return [[1.0] + [0.0] * 383 for _ in texts]

    monkeypatch.setattr(minilm, "missing_reason", lambda: None)
    monkeypatch.setattr(minilm, "_load", lambda: Encoder())
    provider = LocalProvider()
    assert provider.models()[1].available
    result = await provider.embed("local:all-minilm-l6-v2", ["a", "b"])
    assert result.dimensions == 384 and len(result.vectors) == 2
    assert calls[0][:2] == (["a", "b"], True)
    assert calls[0][2] != threading.main_thread().name
