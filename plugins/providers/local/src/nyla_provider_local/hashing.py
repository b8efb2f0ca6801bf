"""A fast deterministic hashing embedder: no network, no download, no model files.

Features of a text are its lower-cased word tokens (weight 1) and the character n-grams of
each word padded with spaces (3- to 5-grams, weight 0.5 each), so that inflections and typos
still share most features. Each feature is hashed (BLAKE2b, stable across processes and
platforms, unlike ``hash()``) to a bucket of the vector and a sign (signed feature hashing
keeps the inner product unbiased), counts are damped with ``1 + log(tf)``, and the vector is
L2-normalized so the cosine similarity is a plain dot product.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from hashlib import blake2b

DEFAULT_DIMENSIONS = 384
NGRAM_SIZES = (3, 4, 5)
NGRAM_WEIGHT = 0.5

_TOKEN = re.compile(r"\w+", re.UNICODE)


def features(text: str) -> Counter[str]:
    """The weighted features of ``text`` (words and character n-grams)."""
    normalized = unicodedata.normalize("NFKC", text).casefold()
    counts: Counter[str] = Counter()
    for word in _TOKEN.findall(normalized):
        counts["w:" + word] += 1
        padded = f" {word} "
        for n in NGRAM_SIZES:
            for i in range(max(1, len(padded) - n + 1)):
                counts["c:" + padded[i : i + n]] += 1
    return counts


def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    digest = int.from_bytes(blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return digest % dimensions, (1.0 if digest >> 63 else -1.0)


def embed_text(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """The L2-normalized hashed vector of ``text`` (all zeros for text without words)."""
    vector = [0.0] * dimensions
    for feature, count in features(text).items():
        index, sign = _bucket(feature, dimensions)
        weight = 1.0 if feature.startswith("w:") else NGRAM_WEIGHT
        vector[index] += sign * weight * (1.0 + math.log(count))
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        return vector
    return [v / norm for v in vector]


def embed_texts(texts: list[str], dimensions: int = DEFAULT_DIMENSIONS) -> list[list[float]]:
    """Vectors of ``texts`` in order."""
    return [embed_text(t, dimensions) for t in texts]
