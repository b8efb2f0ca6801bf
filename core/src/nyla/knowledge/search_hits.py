"""A search's rows as :class:`~nyla.models.knowledge.SearchHit` objects, built without
pydantic validation: every value comes from our own typed columns (``bigint``, ``text``, a
scope from the owner key we wrote, a float distance), so validating it again per hit cost
more than the rest of the search's Python (measured: 3.5 µs per hit validated against
1.2 µs built; a search returns ten or more). The embedding model is not a column of the
rows: every statement of a search selects one model (a literal in its ``WHERE``), so each
hit's model is the search's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

from pydantic import BaseModel

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
#: join condition: the ranked chunk ``n`` belongs to file ``f``
FILE_OF_RANKED = f"f.file_no = (n.id >> {CHUNK_ID_BITS})"

_SCOPES = {s.value: s for s in Scope}
#: owner key -> its scope
_SCOPE_OF: dict[str, Scope] = {}
_FIELDS = frozenset(SearchHit.model_fields)
_FIELDS_SET = set(_FIELDS)
_RESULT_FIELDS = frozenset(SearchResult.model_fields)
_new = object.__new__
_set = object.__setattr__
# BaseModel's own slot descriptors, set directly: object.__setattr__ looks each name up
# on the class first (measured 3.4 -> 2.7 µs a hit)
_SLOTS = BaseModel.__dict__
_put_dict = _SLOTS["__dict__"].__set__
_put_fields_set = _SLOTS["__pydantic_fields_set__"].__set__
_put_extra = _SLOTS["__pydantic_extra__"].__set__
_put_private = _SLOTS["__pydantic_private__"].__set__
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
    return _made(
        {
            "chunk_id": chunk,
            "file_id": file_id,
            "file_name": name,
            "seq": seq,
            "text": body,
            "context_ref": ref,
            "content_type": content_type,
            "scope": _SCOPES.get(scope) or Scope(scope),
            "distance": distance,
            "score": (1.0 - (distance or 0.0)) if score is None else score,
            "embedding_model": model,
            "file_hash": file_hash,
            "source_path": source_path,
            "connection_id": connection_id,
            "web_url": web_url,
            "also_in": [],
        }
    )


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
    hits = []
    mask = (1 << CHUNK_ID_BITS) - 1
    scope_of, fields, new = _SCOPE_OF, _FIELDS_SET, _new
    put_dict, put_fields_set, put_extra, put_private = (
        _put_dict,
        _put_fields_set,
        _put_extra,
        _put_private,
    )
    for chunk, body, ref, content_type, owner, distance in rows:
        file = files.get(chunk >> CHUNK_ID_BITS)
        if file is None:
            if complete:
                return None
            continue
        scope = scope_of.get(owner)
        if scope is None:
            scope = _scope(owner)
        # the object as _made builds it, inlined: this loop is most of a search's Python
        made = new(SearchHit)
        put_dict(made, {
            "chunk_id": chunk, "file_id": file[0], "file_name": file[1], "seq": chunk & mask,
            "text": body, "context_ref": ref, "content_type": content_type,
            "scope": scope, "distance": distance,
            "score": 1.0 - distance, "embedding_model": model, "file_hash": file[2],
            "source_path": file[3], "connection_id": file[4], "web_url": file[5],
            "also_in": [],
        })  # fmt: skip
        put_fields_set(made, fields.copy())
        put_extra(made, None)
        put_private(made, None)
        hits.append(made)
    return hits


def _scope(owner: str) -> Scope:
    """The scope of an owner key (noted: a reader's keys repeat from search to search)."""
    scope = owner.partition(":")[0]
    found = _SCOPES.get(scope) or Scope(scope)
    if len(_SCOPE_OF) >= 4096:
        _SCOPE_OF.clear()
    _SCOPE_OF[owner] = found
    return found


def _made(values: dict[str, Any]) -> SearchHit:
    # what BaseModel.model_construct sets, without its per-field default handling
    made = _new(SearchHit)
    _put_dict(made, values)
    _put_fields_set(made, set(_FIELDS))
    _put_extra(made, None)
    _put_private(made, None)
    return made


def rescored(found: SearchHit, score: float) -> SearchHit:
    """``found`` with ``score`` (set in place: the hit is the search's own object)."""
    found.__dict__["score"] = score
    return found


def merged(hits: Sequence[SearchHit], k: int) -> list[SearchHit]:
    """The first ``k`` of ``hits`` with the same file indexed from several places (same
    bytes, same chunk position) as one hit: the best-ranked, the others in its
    ``also_in``."""
    if len({(h.file_hash, h.seq) for h in hits}) == len(hits):
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
