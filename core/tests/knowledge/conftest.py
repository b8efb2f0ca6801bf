"""Shared helpers of the knowledge-store tests: a deterministic embedder and a kernel on the
test database with a scripted provider that embeds with it."""

from __future__ import annotations

import hashlib
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest

from nyla.models.agent import RunContext
from nyla.models.files import FileItem, Scope
from nyla.models.neutralize import Finding

DATA = Path(__file__).resolve().parents[3] / "tests" / "data"
DIMS = 64


def hash_embed(texts: list[str], dims: int = DIMS) -> list[list[float]]:
    """Bag-of-words hashing embedder: texts sharing words are close (cosine)."""
    out = []
    for text in texts:
        vec = [0.0] * dims
        for word in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            vec[h % dims] += 1.0 if (h >> 32) & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        out.append([v / norm if any(vec) else 1.0 / math.sqrt(dims) for v in vec])
    return out


class CountingEmbedder:
    """hash_embed that counts the texts it embedded and can be made to fail."""

    def __init__(self, dims: int = DIMS) -> None:
        self.dims = dims
        self.texts: list[str] = []
        self.fail = False

    def __call__(self, texts: list[str]) -> list[list[float]]:
        if self.fail:
            from nyla.errors import ProviderServerError

            raise ProviderServerError("embedding backend down", provider="scripted")
        self.texts.extend(texts)
        return hash_embed(texts, self.dims)


class RegexNeutralizer:
    """Finds e-mail addresses and Swiss IBANs (a stand-in detector for these tests)."""

    id = "test-regex"
    _PATTERNS = (
        ("EMAIL", re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")),
        ("IBAN", re.compile(r"\bCH\d{2}(?: ?\d{4}){4} ?\d\b")),
    )

    def find(self, text: str) -> list[Finding]:
        found = []
        for category, pattern in self._PATTERNS:
            for m in pattern.finditer(text):
                found.append(Finding(start=m.start(), end=m.end(), category=category, value=m[0]))
        return found


class NeutralizerPlugin:
    """Plugin object contributing :class:`RegexNeutralizer`."""

    from nyla.hookspecs import hookimpl

    @hookimpl
    def nyla_neutralizers(self) -> list[Any]:
        return [RegexNeutralizer()]


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def kernel(db, make_kernel, scripted, embedder):
    """A kernel on the test schema whose only provider is a scripted model embedding with
    ``embedder`` (plus the test neutralizer)."""
    provider = scripted(lambda request, index: "ok", embed_fn=embedder)
    return make_kernel(provider, NeutralizerPlugin(), db=db, builtins=False)


def ctx(
    user: str = "u1", mandate: str | None = "m1", instance: str | None = None, **kw
) -> RunContext:
    return RunContext(user_id=user, mandate_id=mandate, feature_instance_id=instance, **kw)


def item(
    file_id: str,
    name: str,
    *,
    scope: Scope = Scope.PERSONAL,
    user: str = "u1",
    mandate: str | None = "m1",
    instance: str | None = None,
    neutralize: bool = False,
    data_source_id: str | None = None,
    mime: str = "application/octet-stream",
) -> FileItem:
    return FileItem(
        id=file_id,
        name=name,
        mime_type=mime,
        scope=scope,
        user_id=user,
        mandate_id=mandate,
        feature_instance_id=instance,
        neutralize=neutralize,
        data_source_id=data_source_id,
    )


def unit_vector(rng: random.Random, dims: int = DIMS) -> list[float]:
    """A random unit vector (cosine distances are then 1 - dot product)."""
    v = [rng.gauss(0, 1) for _ in range(dims)]
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


async def seed_chunks(kernel: Any, rows: list[Any], files: dict[str, str], model: str, dims: int):
    """Write ``rows`` (``ChunkRow`` s) straight into the chunk table with a personal file
    index entry per file (``files``: file id -> user), then build the model's vector index
    and refresh the planner's statistics."""
    from collections import Counter

    from nyla.knowledge.vectors import copy_chunks
    from nyla.tables.knowledge import FileContentIndex

    counts = Counter(r.file_id for r in rows)
    async with kernel.db.session() as s:
        for file_id, user in files.items():
            s.add(
                FileContentIndex(
                    file_id=file_id,
                    name=file_id,
                    scope="personal",
                    owner_key=f"personal:{user}",
                    user_id=user,
                    status="indexed",
                    structure={},
                    size=0,
                    chunk_count=counts[file_id],
                )
            )
        await s.flush()
        await copy_chunks(s, rows)
    await kernel.knowledge.indexes.ensure_vector_index(model, dims)
    await kernel.knowledge.indexes.analyze()
