"""Which knowledge hits an answer cites: one per file, best first, at most five, and only
files that score near the best one (the context quotes near-misses the answer does not use)."""

from __future__ import annotations

from types import SimpleNamespace

from nyla.agent.runtime import MAX_CITATIONS, citations


def hit(file_id: str, score: float, **kw):
    return SimpleNamespace(
        file_id=file_id,
        file_name=f"{file_id}.txt",
        source_path=f"/{file_id}.txt",
        context_ref="",
        connection_id=kw.get("connection_id"),
        score=score,
        web_url=kw.get("web_url"),
    )


def test_one_citation_per_file_best_first_and_near_misses_left_out() -> None:
    hits = [hit("a", 0.40), hit("b", 0.90), hit("a", 0.80), hit("c", 0.44), hit("d", 0.46)]
    cited = citations(hits)
    assert [c["fileId"] for c in cited] == ["b", "a", "d"]
    assert cited[1]["score"] == 0.8  # a file's best hit counts


def test_at_most_five_and_the_vendor_address_kept() -> None:
    hits = [hit(str(i), 1.0 - i / 100, web_url=f"https://x.test/{i}") for i in range(9)]
    cited = citations(hits)
    assert len(cited) == MAX_CITATIONS == 5
    assert cited[0]["url"] == "https://x.test/0"
    assert citations([]) == []
