"""Full-text search that understands language (issue 30): each chunk's language detected and
stored, its terms stemmed and stop-worded in that language with accents folded; the query
read as a search box reads it (phrases, -exclusions, OR); a stop-word-only query answered
with a clear message; a file with no body text still found; a file indexed from two places
one hit; an older store's rows moved to the new terms in place."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from nyla.db import Database
from nyla.errors import InvalidQueryError
from nyla.knowledge.language import detect, detect_all, fold
from nyla.knowledge.search import text_ranks
from nyla.knowledge.search_text import parse_query
from nyla.models.knowledge import SearchQuery

from .conftest import ctx, item

GERMAN = (
    "Die Rechnung für die Beratung in Zürich ist seit zwei Wochen überfällig. Bitte "
    "schicken Sie dem Kunden eine freundliche Erinnerung mit der Zahlungsfrist."
)
ENGLISH = "The quarterly report shows that the team in Lucerne grew by twelve people."
FRENCH = "La réunion de l'équipe aura lieu à Genève le mois prochain, avec tous les chefs."
ITALIAN = "La riunione della squadra si terrà a Lugano il mese prossimo con tutti i responsabili."


async def _lexical(kernel, query: str, user: str = "u1") -> list[str]:
    """File ids the full-text half alone ranks for ``query``, best first."""
    await kernel.knowledge.retrieval.ensure_text_search(background=False)
    async with kernel.db.session() as s:
        ids = await text_ranks(
            s,
            where="true",
            params={"keys": [f"personal:{user}"]},
            query=query,
            limit=10,
        )
        names = dict(
            (
                await s.execute(
                    text(
                        "SELECT c.id, f.file_id FROM knowledge_chunk c JOIN knowledge_file_index f "
                        "ON f.file_no = c.id >> 20 WHERE c.id = ANY(:ids)"
                    ),
                    {"ids": ids},
                )
            ).all()
        )
    return list(dict.fromkeys(names[i] for i in ids))


async def _index(kernel, files: dict[str, str]) -> None:
    for file_id, body in files.items():
        result = await kernel.knowledge.indexing.index_file(
            item(file_id, f"{file_id}.txt"), body.encode(), context=ctx()
        )
        assert result.status == "indexed", result.error


def test_an_ascii_word_folds_as_the_decomposition_folds_it():
    import unicodedata

    def by_decomposition(word: str) -> str:
        decomposed = unicodedata.normalize("NFKD", word.lower().replace("ß", "ss"))
        return "".join(ch for ch in decomposed if not unicodedata.combining(ch))

    every_ascii = "".join(map(chr, range(128)))
    for word in (every_ascii, "Check", "SOURCES", "x-Ray_2", "Zürich", "Straße", "ﬁle"):
        assert fold(word) == by_decomposition(word), word
    assert fold("Zürich") == "zurich" and fold("Straße") == "strasse" and fold("ﬁle") == "file"


def test_the_detector_tells_the_four_languages_apart():
    assert [detect(t) for t in (GERMAN, ENGLISH, FRENCH, ITALIAN)] == ["de", "en", "fr", "it"]
    assert detect("OK 42") == ""  # too little to tell: searched as simple text
    # a piece too short to tell takes its document's language
    assert detect_all([GERMAN, "Zürich 2026"]) == ["de", "de"]


async def test_each_chunk_records_its_language(kernel):
    await _index(kernel, {"de": GERMAN, "en": ENGLISH, "fr": FRENCH, "it": ITALIAN})
    async with kernel.db.session() as s:
        found = dict(
            (
                await s.execute(
                    text(
                        "SELECT f.file_id, t.language FROM knowledge_chunk_lookup t "
                        "JOIN knowledge_file_index f ON f.file_no = t.chunk_id >> 20"
                    )
                )
            ).all()
        )
    assert found == {"de": "de", "en": "en", "fr": "fr", "it": "it"}


async def test_german_words_are_found_in_other_forms(kernel):
    await _index(kernel, {"invoice": GERMAN, "other": ENGLISH})
    assert await _lexical(kernel, "Rechnungen") == ["invoice"]
    assert await _lexical(kernel, "überfälligen Erinnerungen") == ["invoice"]


async def test_accents_are_folded_both_ways(kernel):
    await _index(kernel, {"zurich": GERMAN, "geneva": "Our new office in Geneve opens soon."})
    assert await _lexical(kernel, "Zurich") == ["zurich"]
    assert await _lexical(kernel, "Genève") == ["geneva"]


async def test_phrases_exclusions_and_or(kernel):
    await _index(
        kernel,
        {
            "overdue": "The invoice for the consulting work is overdue; send a reminder.",
            "paid": "The invoice was paid on time by the customer last week.",
            "offer": "We sent the customer an offer for the consulting work.",
        },
    )
    assert set(await _lexical(kernel, "invoice")) == {"overdue", "paid"}
    assert await _lexical(kernel, "invoice -overdue") == ["paid"]
    assert await _lexical(kernel, '"consulting work" -invoice') == ["offer"]
    assert await _lexical(kernel, '"paid on time"') == ["paid"]
    assert await _lexical(kernel, '"time paid"') == []  # a phrase keeps its order
    assert set(await _lexical(kernel, "reminder OR offer")) == {"overdue", "offer"}


async def test_rare_words_outrank_common_ones(kernel):
    files = {f"team-{i}": f"The team met on day {i} to talk about the roadmap." for i in range(8)}
    files["offsite"] = "Offsite planning: the team meets in Lucerne in June."
    await _index(kernel, files)
    assert (await _lexical(kernel, "where is the team offsite"))[0] == "offsite"


async def test_a_query_of_stop_words_only_says_so(kernel):
    await _index(kernel, {"a": ENGLISH})
    for query in ("where is the", "und die", "Où est le", "What is it?"):
        with pytest.raises(InvalidQueryError, match="only common words"):
            await kernel.knowledge.search(SearchQuery(text=query, context=ctx()))
    with pytest.raises(InvalidQueryError, match="only says what to leave out"):
        await kernel.knowledge.search(SearchQuery(text="-report", context=ctx()))
    assert parse_query("where is the team offsite").words == ["team", "offsite"]


async def test_a_one_line_markdown_file_and_an_empty_file_are_found(kernel, tmp_path):
    (tmp_path / "offsite.md").write_text("# Offsite in Lucerne\n", encoding="utf-8")
    (tmp_path / "budget-notes.txt").write_text("", encoding="utf-8")
    results = await kernel.knowledge.indexing.index_paths([tmp_path], context=ctx())
    assert {r.name: r.chunks for r in results} == {"offsite.md": 1, "budget-notes.txt": 1}
    hits = (await kernel.knowledge.search(SearchQuery(text="Lucerne", context=ctx(), k=1))).hits
    assert hits[0].file_name == "offsite.md"
    hits = (
        await kernel.knowledge.search(SearchQuery(text="budget notes", context=ctx(), k=1))
    ).hits
    assert hits[0].file_name == "budget-notes.txt"


async def test_a_file_indexed_from_two_places_is_one_hit(kernel, tmp_path):
    body = b"Offsite planning: the team meets in Lucerne on 12 June."
    (tmp_path / "offsite.txt").write_bytes(body)
    (tmp_path / "other.txt").write_bytes(b"The board approved the new office in Bern.")
    await kernel.knowledge.indexing.index_paths([tmp_path], context=ctx())
    synced = await kernel.knowledge.indexing.index_file(
        item("conn-1:offsite", "offsite.txt"),
        body,
        context=ctx(),
        source_path="/meetings/offsite.txt",
    )
    assert synced.status == "indexed"
    for hybrid in (True, False):
        result = await kernel.knowledge.search(
            SearchQuery(text="team offsite Lucerne", context=ctx(), k=5, hybrid=hybrid)
        )
        offsite = [h for h in result.hits if h.file_name == "offsite.txt"]
        assert len(offsite) == 1, [h.file_id for h in result.hits]
        places = {offsite[0].file_id, *(s.file_id for s in offsite[0].also_in)}
        assert "conn-1:offsite" in places and len(places) == 2
        paths = {offsite[0].source_path, *(s.source_path for s in offsite[0].also_in)}
        assert "/meetings/offsite.txt" in paths


async def test_an_older_store_moves_to_the_new_terms_in_place(kernel, embedded_pg):
    """A store written before languages: its tables lack the language columns and its
    terms are ``simple`` ones. Opening it adds the columns and keeps every row; its rows
    stay searchable meanwhile and are re-analysed into their language."""
    await _index(kernel, {"invoice": GERMAN})
    async with kernel.db.session() as s:
        await s.execute(
            text("UPDATE knowledge_chunk_lookup SET tsv = to_tsvector('simple', 'rechnung')")
        )
        await s.execute(text("ALTER TABLE knowledge_chunk_lookup DROP COLUMN language"))
        await s.execute(text("ALTER TABLE knowledge_chunk DROP COLUMN language"))
    reopened = Database(embedded_pg, schema=kernel.db.schema)
    try:
        await reopened.ensure_ready()
        async with reopened.session() as s:
            rows = (await s.execute(text("SELECT language FROM knowledge_chunk_lookup"))).scalars()
            assert list(rows) == [None]
    finally:
        await reopened.dispose()
    service = kernel.knowledge
    assert await _lexical(kernel, "Rechnung") == ["invoice"]  # as simple text meanwhile
    assert await _lexical(kernel, "Rechnungen") == []
    assert await service.retrieval.reanalyze_text() == 1
    assert await _lexical(kernel, "Rechnungen") == ["invoice"]
    async with kernel.db.session() as s:
        language = (await s.execute(text("SELECT language FROM knowledge_chunk"))).scalar()
    assert language == "de"
