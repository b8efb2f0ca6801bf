"""The full-text ranking and the fusion (issue 30): BM25 in SQL (occurrences counted back from
``ts_rank``, document frequency and length normalization in the scope), the earlier
``idf * ts_rank`` still selectable, and the vector ranking weighed down for a query in a
language the embedding model was not trained on."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import text

from nyla.knowledge.search import reciprocal_rank_fusion, text_ranks
from nyla.knowledge.search_text import _occurrences
from nyla.models.ai import ModelCapabilities
from nyla.models.knowledge import SearchQuery

from .conftest import NeutralizerPlugin, ctx, item


async def _index(kernel, files: dict[str, str]) -> None:
    for file_id, body in files.items():
        result = await kernel.knowledge.indexing.index_file(
            item(file_id, f"{file_id}.txt"), body.encode(), context=ctx()
        )
        assert result.status == "indexed", result.error


async def _lexical(kernel, query: str, **kw) -> list[str]:
    await kernel.knowledge.retrieval.ensure_text_search(background=False)
    async with kernel.db.session() as s:
        ids = await text_ranks(
            s, where="true", params={"keys": ["personal:u1"]}, query=query, limit=10, **kw
        )
        names = dict(
            (
                await s.execute(
                    text(
                        "SELECT c.id, f.file_id FROM knowledge_chunk c JOIN knowledge_file_index "
                        "f ON f.file_no = c.id >> 20 WHERE c.id = ANY(:ids)"
                    ),
                    {"ids": ids},
                )
            ).all()
        )
    return list(dict.fromkeys(names[i] for i in ids))


@pytest.mark.parametrize("title", [False, True])
async def test_occurrences_are_counted_back_from_ts_rank(db, title):
    """The inversion of ``ts_rank`` gives each count from 1 to 60 (to a tenth), whatever the
    other words of the chunk and with or without a title hit."""
    async with db.session() as s:
        for n in (1, 2, 3, 4, 5, 8, 13, 21, 34, 60):
            body = " ".join(["apfel"] * n + ["birne", "kirsche"] * 7)
            tsv = "to_tsvector('simple', :body)"
            if title:
                tsv = f"setweight(to_tsvector('simple', 'apfel'), 'A') || {tsv}"
            rank = f"ts_rank('{{1,1,1,1}}', {tsv}, to_tsquery('simple', 'apfel'))"
            found = (await s.execute(text(f"SELECT {_occurrences(rank)}"), {"body": body})).scalar()
            assert found == pytest.approx(n + title, abs=0.1 * (n + title)), n
        missing = "ts_rank('{1,1,1,1}', to_tsvector('simple', 'birne'), 'apfel')"
        assert (await s.execute(text(f"SELECT {_occurrences(missing)}"))).scalar() == 0


async def test_a_word_said_more_often_ranks_higher(kernel):
    """BM25 counts repetitions; ``ts_rank`` barely does and divides by the log of the
    length, so it put the short chunk that says the word once first."""
    filler = "Der Bericht beschreibt das Vorgehen im Projekt und die nächsten Schritte."
    await _index(
        kernel,
        {
            "once": "Die Spesen werden erstattet.",
            "often": f"Spesen, Spesen, Spesen. {filler} Spesen, Spesen. {filler} Spesen.",
        },
    )
    assert (await _lexical(kernel, "Spesen"))[:2] == ["often", "once"]
    assert (await _lexical(kernel, "Spesen", method="ts_rank"))[:2] == ["once", "often"]


async def test_a_rare_word_outweighs_a_common_one_said_often(kernel):
    common = "Der Bericht zum Projekt."
    files = {f"report-{i}": f"{common} Abschnitt {i} handelt von anderem." for i in range(8)}
    files["many-reports"] = "Bericht, Bericht, Bericht: jeder Bericht ist ein Bericht."
    files["the-rare-one"] = "Der Bericht zum Kilometergeld liegt bei der Buchhaltung."
    await _index(kernel, files)
    assert (await _lexical(kernel, "Bericht Kilometergeld"))[0] == "the-rare-one"


async def test_a_long_chunk_needs_more_mentions_than_a_short_one(kernel):
    long_text = "Die Ferien werden beantragt. " + " ".join(
        f"Absatz {i} regelt etwas ganz anderes im Betrieb." for i in range(25)
    )
    await _index(kernel, {"long": long_text, "short": "Die Ferien werden beantragt."})
    ranked = await _lexical(kernel, "Ferien", avg_tokens=60.0)
    assert ranked[:2] == ["short", "long"]


async def test_the_earlier_ranking_is_still_there(kernel):
    await _index(kernel, {"a": "Die Spesen werden erstattet.", "b": "Das Budget steht."})
    assert await _lexical(kernel, "Spesen", method="ts_rank") == ["a"]
    kernel.knowledge.settings.text_rank = "ts_rank"
    result = await kernel.knowledge.search(SearchQuery(text="Spesen", context=ctx(), k=2))
    assert result.hits[0].file_id == "a"


def test_fusion_weights_move_the_vector_ranking_down():
    vector, keyword = [1, 2, 3], [3, 1]
    assert reciprocal_rank_fusion([vector, keyword])[0][0] == 1
    fused = reciprocal_rank_fusion([vector, keyword], weights=(0.05, 1.0))
    assert [i for i, _ in fused] == [3, 1, 2]
    assert fused[0][1] == pytest.approx(0.05 / 63 + 1 / 61)


# ---- the fusion by the query's language ----------------------------------------------------

NEAR = "near"  # the chunk the embedder puts nearest every question (vector rank 1)


def _embed(texts: list[str]) -> list[list[float]]:
    """Questions and the ``near`` chunk point one way, everything else elsewhere: the vector
    ranking is ``near`` first whatever is asked."""
    out = []
    for t in texts:
        if "?" in t or NEAR in t:
            out.append([1.0, 0.0, 0.0, 0.0])
        else:
            out.append([v / math.sqrt(2) for v in (0.0, 1.0, 1.0, 0.0)])
    return out


@pytest.fixture
def english_kernel(db, make_kernel, scripted):
    """A kernel whose one embedding model was trained on English only."""
    provider = scripted(
        lambda request, index: "ok",
        embed_fn=_embed,
        capabilities=ModelCapabilities(languages=["en"]),
    )
    kernel = make_kernel(provider, NeutralizerPlugin(), db=db, builtins=False)
    kernel.knowledge.settings.embedding_model = provider.spec.id
    return kernel


async def test_a_question_in_another_language_leans_on_full_text(english_kernel):
    """Vector ranking: ``near`` first. Full text: ``words`` (the question's words three
    times) before ``near`` (once each). An English question fuses both equally (``near``
    wins on its two ranks); a German one weighs the English model's ranking at 0.05, so
    the full text's order stands."""
    kernel = english_kernel
    for file_id, body in {
        NEAR: f"{NEAR}: Reisekosten travel expenses Abrechnung claim.",
        "words": "Reisekosten Reisekosten Reisekosten. Travel expenses, travel expenses, "
        "travel expenses. Abrechnung Abrechnung Abrechnung, claim claim claim.",
        "other": "Die Kantine ist am Freitag geschlossen.",
    }.items():
        result = await kernel.knowledge.indexing.index_file(
            item(file_id, f"{file_id}.txt"), body.encode(), context=ctx()
        )
        assert result.status == "indexed", result.error
    english = await kernel.knowledge.search(
        SearchQuery(text="How do I claim my travel expenses?", context=ctx(), k=3)
    )
    german = await kernel.knowledge.search(
        SearchQuery(text="Wie mache ich die Abrechnung der Reisekosten?", context=ctx(), k=3)
    )
    assert [h.file_id for h in english.hits][:2] == [NEAR, "words"]
    assert [h.file_id for h in german.hits][:2] == ["words", NEAR]
    # a model that knows every language (no languages declared) fuses equally
    kernel.knowledge.retrieval._model_languages["scripted:model"] = frozenset()
    german = await kernel.knowledge.search(
        SearchQuery(text="Wie mache ich die Abrechnung der Reisekosten?", context=ctx(), k=3)
    )
    assert german.hits[0].file_id == NEAR
