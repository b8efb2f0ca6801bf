"""Vectors a caller already has: index without sending the texts to a model."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from nyla.knowledge.chunking import content_hash


class PrecomputedEmbeddings:
    """Vectors of chunk texts, all from one embedding ``model``, for
    :meth:`~nyla.knowledge.service.KnowledgeService.index_files` (and ``index_file``,
    ``index_paths``) as ``embeddings=``.

    A chunk whose text is found here (compared whitespace-normalized, as dedupe compares)
    is stored with the given vector and never sent to a model; the files are indexed under
    ``model``, so search them with ``SearchQuery(vector=..., model=model, ...)``. A chunk
    that is not found is embedded by ``model`` through the AI service: where no provider serves that
    model the file fails with the reason and nothing of it is stored. Texts longer than the
    chunk budget (``knowledge.chunk_tokens``) are cut into several chunks, which then are not
    found: give one vector per chunk-sized text.

    ``vectors`` maps text -> vector, or is an iterable of ``(text, vector)`` pairs; every
    vector must have the same, non-zero number of dimensions."""

    def __init__(
        self,
        model: str,
        vectors: Mapping[str, Sequence[float]] | Iterable[tuple[str, Sequence[float]]],
    ) -> None:
        if not model:
            raise ValueError("precomputed embeddings need the name of the model that made them")
        pairs = vectors.items() if isinstance(vectors, Mapping) else vectors
        self.model = model
        self._by_hash: dict[str, Sequence[float]] = {}
        self.dims = 0
        for text, vector in pairs:
            if not vector:
                raise ValueError(f"the vector of {text[:40]!r} is empty")
            if self.dims and len(vector) != self.dims:
                raise ValueError(
                    f"precomputed vectors must have one dimension: {len(vector)} "
                    f"(for {text[:40]!r}) vs {self.dims}"
                )
            self.dims = len(vector)
            self._by_hash[content_hash(text)] = vector

    def __len__(self) -> int:
        return len(self._by_hash)

    def get(self, chunk_hash: str) -> Sequence[float] | None:
        """The vector of the chunk with this content hash, or ``None``."""
        return self._by_hash.get(chunk_hash)
