"""Searches whose hits' files are mostly not held join their files in the ranking
(``FileRows.worth_holding``): one statement instead of the ranking and a second one for the
details, the same hits, and what the join read held for the searches after it."""

from __future__ import annotations

from nyla.knowledge.file_rows import FileRows
from nyla.knowledge.vectors import CHUNK_ID_BITS

from .test_file_rows import _query, details_reads  # noqa: F401 (a fixture)
from .test_search_hits import READERS, _seed, _use_path


def _dumped(result) -> list[dict]:
    return [h.model_dump() for h in result.hits]


async def test_searches_that_find_nothing_held_join_their_files(kernel, details_reads):  # noqa: F811
    seeded = await _seed(kernel, READERS, per_reader=12)
    files = kernel.knowledge.indexes.files
    for path in ("exact", "hnsw"):
        _use_path(kernel, path)
        query = _query(seeded["m1 passage 4"][1])
        first = await kernel.knowledge.search(query)
        assert first.path == path and len(first.hits) == 6
        details_reads.clear()
        for _ in range(10):
            files.invalidate()  # what a change notified does: nothing held
            assert _dumped(await kernel.knowledge.search(query)) == _dumped(first)
        # a second statement while most searches found their files held, then none
        assert 1 <= len(details_reads) < 10
        assert not files.worth_holding()
        reads = len(details_reads)
        # what the joined rankings read is held: the same search finds every file held
        # and, after enough of those, ranks the chunks alone again (still no read)
        searches = 0
        while not files.worth_holding():
            assert _dumped(await kernel.knowledge.search(query)) == _dumped(first)
            searches += 1
            assert searches < 40
        assert _dumped(await kernel.knowledge.search(query)) == _dumped(first)
        assert len(details_reads) == reads


def test_details_a_change_overtook_are_not_kept():
    files = FileRows()
    row = (5 << CHUNK_ID_BITS | 2, "text", "", "text", "user:u1", 0.25)
    details = ("file-5", "a.txt", "hash", "/a.txt", "conn", "https://example.org/a")
    started = files.generation
    files.invalidate()  # a change notified while the ranking ran
    chunks, read = files.joined([row + details], started)
    assert chunks == [row] and read == {5: details}
    assert dict(files.rows()) == {}
    files.joined([row + details], files.generation)
    assert dict(files.rows()) == {5: details}


def test_the_share_of_searches_found_held_decides():
    files = FileRows()
    assert files.worth_holding()
    misses = 0
    while files.worth_holding() and misses < 100:
        files.note(False)
        misses += 1
    assert 2 <= misses <= 8  # a few searches, not one unlucky one
    for _ in range(misses * 4):
        files.note(True)
    assert files.worth_holding()
