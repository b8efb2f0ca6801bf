"""A search's rows as :class:`~nyla.models.knowledge.SearchHit` objects, built without
validation: every value comes from our own typed columns (``bigint``, ``text``, a scope
from the owner key we wrote, a float distance), so validating it again per hit cost more
than the rest of the search's Python (measured: 3.5 µs per hit validated against 1.2 µs
built; a search returns ten or more). A hit made or read anywhere else is validated
(``SearchHit(**fields)``, ``SearchHit.model_validate``). The embedding model is not a
column of the rows: every statement of a search selects one model (a literal in its
``WHERE``), so each hit's model is the search's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

from nyla.knowledge.vectors import CHUNK_ID_BITS
from nyla.models.files import Scope
from nyla.models.knowledge import HitSource, SearchHit, SearchResult


def _hit_columns(chunk: str) -> str:
    return (
        f"{chunk}.id, f.file_id, f.name, ({chunk}.id & {(1 << CHUNK_ID_BITS) - 1})::int, "
        f"{chunk}.data, {chunk}.context_ref, {chunk}.content_type, "
        f"split_part({chunk}.owner_key, ':', 1), f.content_hash, f.source_path, "
        "f.connection_id, f.web_url"
    )


#: the columns of a hit, ``c`` the chunk and ``f`` its file index row, in :func:`hit` order
#: (the distance follows them)
HIT_COLUMNS = _hit_columns("c")
#: the chunk columns a ranking carries so that only the file needs joining afterwards
CHUNK_COLUMNS = "c.id, c.data, c.context_ref, c.content_type, c.owner_key"
#: :data:`HIT_COLUMNS` over a ranking ``n`` that carries :data:`CHUNK_COLUMNS` and the
#: distance, joined to its file ``f`` (see :data:`FILE_OF_RANKED`)
RANKED_HIT_COLUMNS = _hit_columns("n")
#: what a hit shows of its file ``f``, in :data:`~nyla.knowledge.file_rows.FileDetails` order
FILE_DETAIL_COLUMNS = "f.file_id, f.name, f.content_hash, f.source_path, f.connection_id, f.web_url"
#: join condition: the ranked chunk ``n`` belongs to file ``f``
FILE_OF_RANKED = f"f.file_no = (n.id >> {CHUNK_ID_BITS})"

_SCOPES = {s.value: s for s in Scope}
#: owner key -> its scope
_SCOPE_OF: dict[str, Scope] = {}
_RESULT_FIELDS = frozenset(SearchResult.model_fields)
_new = object.__new__
_set = object.__setattr__
_distance = itemgetter(5)


def hit(row: Sequence[Any], model: str, score: float | None = None) -> SearchHit:
    """The hit of one row of :data:`HIT_COLUMNS` + distance, found with embedding ``model``
    (``score`` defaults to ``1 - distance``); a row of only the first eight columns and the
    distance leaves the provenance empty. An owner key of an unknown scope raises, as
    validation would."""
    chunk, file_id, name, seq, body, ref, content_type, scope = row[:8]
    file_hash, source_path, connection_id, web_url = (
        row[8:12] if len(row) > 9 else ("", None, None, None)
    )
    distance = row[-1]
    if distance is not None:
        distance = float(distance)
    made = _new(SearchHit)
    made.chunk_id, made.file_id, made.file_name, made.seq = chunk, file_id, name, seq
    made.text, made.context_ref, made.content_type = body, ref, content_type
    made.scope = _SCOPES.get(scope) or Scope(scope)
    made.distance = distance
    made.score = (1.0 - (distance or 0.0)) if score is None else score
    made.embedding_model, made.file_hash = model, file_hash
    made.source_path, made.connection_id, made.web_url = source_path, connection_id, web_url
    made.also_in = []
    return made


class DistinctHits(list[SearchHit]):
    """Hits no two of which share a file's content hash (noted while they were built):
    :func:`merged` has nothing to merge in them."""

    __slots__ = ()


def ranked_hits(
    rows: list[Any],
    files: Mapping[int, Sequence[Any]],
    model: str,
    *,
    resort: bool,
    complete: bool = False,
) -> list[SearchHit] | None:
    """The hits of a lean ranking's rows (:data:`CHUNK_COLUMNS` + distance) with their
    files' details from ``files`` (by file number: file id, name, content hash, source
    path, connection id, web address), nearest first (``resort``: the rows came in the
    index's order). A row whose file is missing (deleted since the ranking) is left out;
    with ``complete`` the answer is ``None`` instead (``files`` is what the process holds:
    the missing details are to be read)."""
    if resort:
        rows.sort(key=_distance)
    hits = DistinctHits()
    hashes: set[str] = set()
    mask = (1 << CHUNK_ID_BITS) - 1
    scope_of, new, add = _SCOPE_OF, _new, hashes.add
    for chunk, body, ref, content_type, owner, distance in rows:
        file = files.get(chunk >> CHUNK_ID_BITS)
        if file is None:
            if complete:
                return None
            continue
        scope = scope_of.get(owner)
        if scope is None:
            scope = _scope(owner)
        # every slot set here, as hit() sets them, inlined: this loop is most of a
        # search's Python
        made = new(SearchHit)
        made.chunk_id = chunk
        made.file_id = file[0]
        made.file_name = file[1]
        made.seq = chunk & mask
        made.text = body
        made.context_ref = ref
        made.content_type = content_type
        made.scope = scope
        made.distance = distance
        made.score = 1.0 - distance
        made.embedding_model = model
        made.file_hash = file[2]
        made.source_path = file[3]
        made.connection_id = file[4]
        made.web_url = file[5]
        made.also_in = []
        add(file[2])
        hits.append(made)
    # the same content hash twice (a file indexed from two places, or two chunks of one
    # file): merged() looks closer
    return hits if len(hashes) == len(hits) else list(hits)


def _scope(owner: str) -> Scope:
    """The scope of an owner key (noted: a reader's keys repeat from search to search)."""
    scope = owner.partition(":")[0]
    found = _SCOPES.get(scope) or Scope(scope)
    if len(_SCOPE_OF) >= 4096:
        _SCOPE_OF.clear()
    _SCOPE_OF[owner] = found
    return found


def rescored(found: SearchHit, score: float) -> SearchHit:
    """``found`` with ``score`` (set in place: the hit is the search's own object)."""
    found.score = score
    return found


def merged(hits: Sequence[SearchHit], k: int) -> list[SearchHit]:
    """The first ``k`` of ``hits`` with the same file indexed from several places (same
    bytes, same chunk position) as one hit: the best-ranked, the others in its
    ``also_in``."""
    if isinstance(hits, DistinctHits) or len({(h.file_hash, h.seq) for h in hits}) == len(hits):
        return list(hits[:k])  # no two alike (the common case): nothing to merge
    kept: list[SearchHit] = []
    first: dict[tuple[str, int], SearchHit] = {}
    for found in hits:
        key = (found.file_hash, found.seq)
        same = first.get(key) if found.file_hash else None
        if same is None:
            if len(kept) < k:
                kept.append(found)
                first[key] = found
            continue
        if found.file_id != same.file_id and all(s.file_id != found.file_id for s in same.also_in):
            same.also_in.append(
                HitSource.model_construct(
                    file_id=found.file_id,
                    file_name=found.file_name,
                    source_path=found.source_path,
                    connection_id=found.connection_id,
                )
            )
    return kept


def result(
    hits: list[SearchHit], path: str, hybrid: bool, candidates: int, model: str
) -> SearchResult:
    """The :class:`~nyla.models.knowledge.SearchResult` of a search, built as :func:`hit`
    builds its hits: every value is the search's own (validating the hits again cost
    about as much as building two of them)."""
    made = _new(SearchResult)
    _set(made, "__dict__", {"hits": hits, "path": path, "hybrid": hybrid,
                            "candidates": candidates, "embedding_model": model,
                            "reranked_by": None})  # fmt: skip
    _set(made, "__pydantic_fields_set__", set(_RESULT_FIELDS))
    _set(made, "__pydantic_extra__", None)
    _set(made, "__pydantic_private__", None)
    return made
