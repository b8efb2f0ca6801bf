"""Scoped search on the real PostgreSQL: full k under selective filters on both vector paths,
model separation, hybrid fusion, and absolute scope isolation (property test)."""

from __future__ import annotations

import asyncio
import math
import random
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nyla.knowledge.chunking import content_hash
from nyla.knowledge.search import reciprocal_rank_fusion
from nyla.knowledge.search_text import parse_query
from nyla.knowledge.vectors import ChunkRow, copy_chunks, hnsw_index_exists, hnsw_index_name
from nyla.models.files import Scope
from nyla.models.knowledge import SearchFilters, SearchQuery
from nyla.tables.knowledge import FileContentIndex

from .conftest import ctx, hash_embed, item, seed_chunks, unit_vector

DIMS = 64


def _unit(rng: random.Random, dims: int = DIMS) -> list[float]:
    return unit_vector(rng, dims)


def _cos_distance(a: list[float], b: list[float]) -> float:
    return 1.0 - sum(x * y for x, y in zip(a, b, strict=True))


async def _load_synthetic(
    kernel, n: int, needle_every: int, model: str = "scripted:model", dims: int = DIMS
):
    """n chunks in 20 files; every ``needle_every``-th chunk belongs to user 'needle'
    (personal), the rest to other users. Returns {chunk text: vector} of the needle rows."""
    rng = random.Random(7)
    needle: dict[str, list[float]] = {}
    rows = []
    files = {}
    for i in range(n):
        is_needle = i % needle_every == 0
        user = "needle" if is_needle else f"other{i % 7}"
        file_id = f"{user}-f{i % 20}"
        files[file_id] = user
        vec = _unit(rng, dims)
        text = f"chunk {i}"
        if is_needle:
            needle[text] = vec
        rows.append(
            ChunkRow(
                file_id,
                i,
                text,
                "",
                "text",
                2,
                uuid.uuid4().hex,
                f"personal:{user}",
                model,
                vec,
            )
        )
    await seed_chunks(kernel, rows, files, model, dims)
    return needle


async def test_one_percent_filter_returns_full_k_on_exact_and_hnsw_paths(kernel):
    needle = await _load_synthetic(kernel, 3000, needle_every=100)
    assert len(needle) == 30
    query = _unit(random.Random(99))
    truth = sorted(needle, key=lambda t: _cos_distance(needle[t], query))[:10]
    service = kernel.knowledge
    who = ctx("needle", mandate=None)

    exact = await service.search(
        SearchQuery(text="", vector=query, model="scripted:model", context=who, k=10, hybrid=False)
    )
    assert exact.path == "exact" and exact.candidates == 30  # counted from the file index
    assert [h.text for h in exact.hits] == truth

    # force the HNSW path with iterative scans
    service.settings.exact_threshold = 0
    service.settings.exact_cost_factor = 0
    hnsw = await service.search(
        SearchQuery(text="", vector=query, model="scripted:model", context=who, k=10, hybrid=False)
    )
    assert hnsw.path == "hnsw"
    assert len(hnsw.hits) == 10
    assert all(h.text in needle for h in hnsw.hits)
    recall = len({h.text for h in hnsw.hits} & set(truth)) / 10
    assert recall >= 0.9
    distances = [h.distance for h in hnsw.hits]
    assert distances == sorted(distances)


async def test_wide_embeddings_get_an_hnsw_index_and_exact_distances(kernel):
    # OpenAI's text-embedding-3-large: 3072 dimensions, more than pgvector's HNSW indexes
    # as `vector` (2000) — the index holds half precision, which it takes up to 4000
    dims = 3072
    needle = await _load_synthetic(kernel, 300, needle_every=3, model="wide:model", dims=dims)
    async with kernel.db.session() as s:
        assert await hnsw_index_exists(s, "wide:model", dims)
    service = kernel.knowledge
    service.settings.exact_threshold = 0
    service.settings.exact_cost_factor = 0
    text, vector = sorted(needle.items())[5]
    result = await service.search(
        SearchQuery(
            text="",
            vector=vector,
            model="wide:model",
            context=ctx("needle", mandate=None),
            k=5,
            hybrid=False,
        )
    )
    assert result.path == "hnsw" and len(result.hits) == 5
    assert result.hits[0].text == text
    # distances are computed on the stored full-precision vectors
    assert abs(result.hits[0].distance) < 1e-6
    assert [h.distance for h in result.hits] == sorted(h.distance for h in result.hits)
    assert all(abs(h.distance - _cos_distance(needle[h.text], vector)) < 1e-5 for h in result.hits)


async def test_an_older_single_precision_index_is_replaced(kernel):
    from sqlalchemy import text

    from nyla.knowledge.vectors import _single_precision_index_name

    await kernel.knowledge.indexing.index_file(item("a", "a.txt"), b"payroll salary", context=ctx())
    old = _single_precision_index_name("scripted:model", DIMS)
    async with kernel.db.session() as s:
        await s.execute(text(f"DROP INDEX {hnsw_index_name('scripted:model', DIMS)}"))
        await s.execute(
            text(
                f"CREATE INDEX {old} ON knowledge_chunk USING hnsw "
                f"((embedding::vector({DIMS})) vector_cosine_ops) "
                "WHERE embedding_model = 'scripted:model'"
            )
        )
    kernel.knowledge.indexes.built.clear()
    await kernel.knowledge.indexes.ensure_vector_index("scripted:model", DIMS)
    async with kernel.db.session() as s:
        assert await hnsw_index_exists(s, "scripted:model", DIMS)
        assert (await s.execute(text("SELECT to_regclass(:n)"), {"n": old})).scalar() is None


async def test_models_never_mix_and_each_has_its_own_index(kernel):
    await kernel.knowledge.indexing.index_file(
        item("a", "a.txt"), b"payroll salary bonus", context=ctx()
    )
    rng = random.Random(1)
    async with kernel.db.session() as s:
        await copy_chunks(
            s,
            [
                ChunkRow(
                    "a",
                    99,
                    "payroll salary bonus other model",
                    "",
                    "text",
                    3,
                    content_hash("payroll salary bonus other model"),
                    "personal:u1",
                    "other:embed",
                    _unit(rng, 32),
                )
            ],
        )
    await kernel.knowledge.indexes.ensure_vector_index("other:embed", 32)
    result = await kernel.knowledge.search(SearchQuery(text="payroll salary", context=ctx(), k=10))
    assert result.hits and {h.embedding_model for h in result.hits} == {"scripted:model"}
    # a hit's model is the search's (rows carry no model column), so the other model's
    # chunk, which matches the keywords best, must be absent by its text
    assert all("other model" not in h.text for h in result.hits)
    assert {h.seq for h in result.hits} == {0}
    async with kernel.db.session() as s:
        assert await hnsw_index_exists(s, "scripted:model", DIMS)
        assert await hnsw_index_exists(s, "other:embed", 32)


async def test_hybrid_finds_a_rare_keyword_and_filters_apply(kernel):
    docs = {
        "k1": "The ledger of invoices for the first quarter.",
        "k2": "Quarterly invoices and ledger entries, reconciled.",
        "k3": "Holiday planning for the team: XQ-4711 is the code of the office door.",
    }
    for fid, text in docs.items():
        await kernel.knowledge.indexing.index_file(
            item(fid, f"{fid}.txt"), text.encode(), context=ctx()
        )
    hybrid = await kernel.knowledge.search(SearchQuery(text="XQ-4711", context=ctx(), k=1))
    assert hybrid.hybrid and hybrid.hits[0].file_id == "k3"
    filtered = await kernel.knowledge.search(
        SearchQuery(
            text="invoices ledger", context=ctx(), k=5, filters=SearchFilters(file_ids=["k2"])
        )
    )
    assert {h.file_id for h in filtered.hits} == {"k2"}


def test_reciprocal_rank_fusion_orders_by_summed_reciprocal_ranks():
    fused = reciprocal_rank_fusion([[1, 2, 3], [3, 4]], k=60)
    ids = [i for i, _ in fused]
    assert ids[0] == 3  # in both lists
    assert ids.index(1) < ids.index(2) and set(ids) == {1, 2, 3, 4}
    assert math.isclose(dict(fused)[3], 1 / 63 + 1 / 61)


# -- scope isolation: hypothesis over random worlds --------------------------------------------

USERS = ["u0", "u1", "u2"]
MANDATES = ["m0", "m1", None]
INSTANCES = ["f0", "f1", None]
VOCAB = [
    "invoice",
    "payroll",
    "ledger",
    "audit",
    "tax",
    "salary",
    "vat",
    "client",
    "report",
    "budget",
]

file_st = st.fixed_dictionaries(
    {
        "scope": st.sampled_from(list(Scope)),
        "user": st.sampled_from(USERS),
        "mandate": st.sampled_from(["m0", "m1"]),
        "instance": st.sampled_from(["f0", "f1"]),
        "words": st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6),
    }
)
caller_st = st.fixed_dictionaries(
    {
        "user": st.sampled_from(USERS),
        "mandate": st.sampled_from(MANDATES),
        "instance": st.sampled_from(INSTANCES),
        "scopes": st.none() | st.lists(st.sampled_from(list(Scope)), min_size=1, unique=True),
        "query": st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3).map(" ".join),
        "k": st.integers(min_value=1, max_value=8),
        "hybrid": st.booleans(),
        "exact": st.booleans(),
    }
)


def _readable(f: dict, c: dict) -> bool:
    scopes = set(c["scopes"]) if c["scopes"] is not None else set(Scope)
    if f["scope"] not in scopes:
        return False
    return {
        Scope.GLOBAL: True,
        Scope.PERSONAL: f["user"] == c["user"],
        Scope.MANDATE: c["mandate"] is not None and f["mandate"] == c["mandate"],
        Scope.FEATURE_INSTANCE: c["instance"] is not None and f["instance"] == c["instance"],
    }[f["scope"]]


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    files=st.lists(file_st, min_size=1, max_size=8),
    callers=st.lists(caller_st, min_size=1, max_size=3),
)
def test_property_search_never_returns_an_unreadable_chunk(embedded_pg, files, callers):
    asyncio.run(_isolation_world(embedded_pg, files, callers))


async def _isolation_world(url: str, files: list[dict], callers: list[dict]) -> None:
    from nyla.db import Database
    from nyla.kernel import Kernel
    from nyla.plugins import PluginHost
    from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

    db = Database(url, schema=f"h_{uuid.uuid4().hex[:12]}")
    provider = ScriptedProvider(lambda r, i: "ok", embed_fn=hash_embed)
    kernel = Kernel(
        plugins=PluginHost.from_plugins([ScriptedPlugin(provider)], builtins=False), db=db
    )
    try:
        owner_of = {}
        for n, f in enumerate(files):
            fid = f"f{n}"
            owner_of[fid] = f
            body = " ".join(f["words"]) + f" file{n}"
            result = await kernel.knowledge.indexing.index_file(
                item(
                    fid,
                    f"{fid}.txt",
                    scope=f["scope"],
                    user=f["user"],
                    mandate=f["mandate"],
                    instance=f["instance"],
                ),
                body.encode(),
                context=ctx(f["user"], f["mandate"], f["instance"]),
            )
            assert result.status == "indexed", result.error
        for c in callers:
            kernel.knowledge.settings.exact_threshold = 10_000 if c["exact"] else 0
            kernel.knowledge.settings.exact_cost_factor = 4.0 if c["exact"] else 0
            result = await kernel.knowledge.search(
                SearchQuery(
                    text=c["query"],
                    context=ctx(c["user"], c["mandate"], c["instance"]),
                    scopes=c["scopes"],
                    k=c["k"],
                    hybrid=c["hybrid"],
                )
            )
            for hit in result.hits:
                assert _readable(owner_of[hit.file_id], c), (hit.file_id, owner_of[hit.file_id], c)
            readable = sum(1 for f in owner_of.values() if _readable(f, c))
            assert len(result.hits) == min(c["k"], readable)
    finally:
        await db.drop_schema()
        await db.dispose()


async def test_hostile_query_text_is_harmless(kernel):
    await kernel.knowledge.indexing.index_file(
        item("a", "a.txt"), b"it is a weird query", context=ctx()
    )
    result = await kernel.knowledge.search(
        SearchQuery(text="it's (a) | !weird & query:* '; DROP", context=ctx())
    )
    assert [h.file_id for h in result.hits] == ["a"]
    assert parse_query("it's (a) | !weird").words == ["weird"]
    assert not parse_query("?! a").searchable


async def test_vectors_are_stored_inline_and_round_trip_exactly(kernel):
    from sqlalchemy import text

    from nyla.knowledge.vectors import vector_binary

    vec = [0.5, -1.25, 3.0, 1e-3]
    assert vector_binary(vec)[:4] == b"\x00\x04\x00\x00"
    async with kernel.db.session() as s:
        s.add(
            FileContentIndex(
                file_id="v",
                name="v",
                scope="personal",
                owner_key="personal:u1",
                user_id="u1",
                status="indexed",
                structure={},
                size=0,
            )
        )
        await s.flush()
        await copy_chunks(
            s,
            [ChunkRow("v", 0, "t", "", "text", 1, content_hash("t"), "personal:u1", "m", vec)],
        )
        stored = (await s.execute(text("SELECT embedding::text FROM knowledge_chunk"))).scalar()
        storage = (
            await s.execute(
                text(
                    "SELECT attstorage FROM pg_attribute WHERE attrelid = "
                    "'knowledge_chunk'::regclass AND attname = 'embedding'"
                )
            )
        ).scalar()
    assert [float(x) for x in stored.strip("[]").split(",")] == vec
    assert storage == "m"


def test_ef_search_grows_with_the_table_and_the_filter():
    from nyla.knowledge.search import EF_MAX, effective_ef_search

    assert effective_ef_search(100, 50_000, 50_000) == 100  # small tables: as configured
    assert effective_ef_search(100, 100_000, 100_000) == 100
    assert effective_ef_search(100, 1_000_000, 1_000_000) == 224  # 10x rows: ~2.2x
    assert effective_ef_search(100, 1_000_000, 100_000) == 631  # and a 10 % filter: ~6x
    assert effective_ef_search(100, 100_000, 10_000) == 282  # 10 % of 100k: ~2.8x
    assert effective_ef_search(100, 10**9, 1) == EF_MAX
    assert effective_ef_search(300, 1_000, 1_000) == 300  # never below the setting


def test_path_choice_follows_the_measured_crossover():
    from nyla.knowledge.search import prefer_exact
    from nyla.knowledge.settings import KnowledgeSettings

    settings = KnowledgeSettings()
    assert prefer_exact(1_000, 100_000, 10, settings)  # 1 % of 100k: exact
    assert not prefer_exact(10_000, 100_000, 10, settings)  # 10 % of 100k: HNSW
    assert prefer_exact(10_000, 1_000_000, 10, settings)  # 1 % of 1M: exact
    assert not prefer_exact(100_000, 1_000_000, 10, settings)  # 10 % of 1M: HNSW
    # small stores: exact while ranking every chunk costs less than the index's scan
    assert prefer_exact(400, 400, 10, settings)
    assert not prefer_exact(1_500, 1_500, 10, settings)


def test_path_choice_follows_the_ef_search_the_scan_would_need():
    from nyla.knowledge.search import effective_ef_search, prefer_exact
    from nyla.knowledge.settings import KnowledgeSettings

    # 10 % of 10k: at the default ef_search (282 under that filter) the index's scan costs
    # more than ranking the 1,000 chunks; at ef_search 10 (29 under it) it costs less
    settings = KnowledgeSettings()
    assert effective_ef_search(100, 10_000, 1_000) == 282
    assert prefer_exact(1_000, 10_000, 10, settings)
    assert not prefer_exact(1_000, 10_000, 10, settings.model_copy(update={"ef_search": 10}))
    # the ef a search passes is the one that counts (adaptive or configured)
    assert not prefer_exact(1_000, 10_000, 10, settings, ef_search=29)
    assert prefer_exact(
        1_000, 10_000, 10, settings.model_copy(update={"adaptive_ef_search": False}), ef_search=282
    )
    # no fixed size decides: the same 1,000 chunks rank on the index in a larger table's
    # wider scope, exactly in a narrower one
    assert prefer_exact(1_000, 100_000, 10, settings)
    # 1 % of 1M: exact even at ef_search 10 (measured: the filtered scan 22-24 ms, exact 13)
    assert prefer_exact(10_000, 1_000_000, 10, settings.model_copy(update={"ef_search": 10}))
    # exact_threshold still forces the exact path up to its cost
    assert prefer_exact(
        1_000, 10_000, 10, settings.model_copy(update={"ef_search": 10, "exact_threshold": 1_000})
    )


async def test_query_vectors_reach_pgvector_exactly(kernel):
    import struct

    from sqlalchemy import text

    from nyla.knowledge.vectors import vector_literal

    rng = random.Random(3)
    # float4 values (what pgvector stores), including extremes and tiny magnitudes
    values = [rng.uniform(-1, 1) for _ in range(380)] + [3.4e38, -1.2e-38, 0.0, 1.0]
    floats = [struct.unpack("f", struct.pack("f", v))[0] for v in values]
    async with kernel.db.session() as s:
        stored = (
            await s.execute(
                text("SELECT CAST(CAST(:q AS vector) AS real[])::float8[]"),
                {"q": vector_literal(floats)},
            )
        ).scalar_one()
    assert stored == floats


@pytest.mark.parametrize("dims", [0, 10, 65])
async def test_a_query_vector_of_the_wrong_dimension_is_a_clear_error(kernel, dims):
    await _load_synthetic(kernel, 200, needle_every=10)
    service = kernel.knowledge
    for exact_threshold in (10**9, 0):  # the exact path and the index path
        service.settings.exact_threshold = exact_threshold
        service.settings.exact_cost_factor = 0 if exact_threshold == 0 else 1
        with pytest.raises(ValueError) as caught:
            await service.search(
                SearchQuery(
                    text="",
                    vector=[0.1] * dims,
                    model="scripted:model",
                    context=ctx("needle", mandate=None),
                    k=5,
                    hybrid=False,
                )
            )
        message = str(caught.value)
        assert f"{dims} dimensions" in message
        assert "SELECT" not in message and "psycopg" not in message
    # the store still answers a query of the right shape afterwards
    service.settings.exact_threshold = 10**9
    ok = await service.search(
        SearchQuery(
            text="",
            vector=_unit(random.Random(1)),
            model="scripted:model",
            context=ctx("needle", mandate=None),
            k=5,
            hybrid=False,
        )
    )
    assert len(ok.hits) == 5


async def test_wrong_dimension_for_a_model_without_a_spec_is_caught_from_the_database(kernel):
    # no provider declares "unlisted:model": only the database knows its vectors' dimension
    await _load_synthetic(kernel, 60, needle_every=3, model="unlisted:model", dims=16)
    assert kernel.ai.model_spec("unlisted:model") is None
    with pytest.raises(ValueError, match="10 dimensions") as caught:
        await kernel.knowledge.search(
            SearchQuery(
                text="",
                vector=[0.3] * 10,
                model="unlisted:model",
                context=ctx("needle", mandate=None),
                k=5,
                hybrid=False,
            )
        )
    assert "SELECT" not in str(caught.value)
