"""Token-aware chunking: budgets, overlap, boundaries."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nyla.ai.tokens import count_text_tokens
from nyla.knowledge.chunking import chunk_objects, content_hash, split_spans, split_text
from nyla.models.knowledge import ContentObject

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
]


def _tokens(text: str) -> list[str]:
    import re

    return re.findall(r"\S+", text)


def test_chunks_respect_budget_and_overlap_exactly():
    text = " ".join(WORDS[i % len(WORDS)] + str(i) for i in range(400))
    spans = split_spans(text, max_tokens=50, overlap=10)
    assert len(spans) > 5
    for start, end in spans:
        assert count_text_tokens(text[start:end]) <= 50
    for (_, end), (start, _) in itertools.pairwise(spans):
        shared = text[start:end]
        # the next chunk repeats the previous chunk's last tokens, up to the overlap budget
        assert 8 <= count_text_tokens(shared) <= 10
    joined = " ".join(text[a:b] for a, b in spans)
    for i in range(400):
        assert f"{WORDS[i % len(WORDS)]}{i}" in joined


def test_chunk_ends_at_a_sentence_when_one_is_near_the_end():
    sentence = "The ledger is closed every quarter by the team. "
    text = sentence * 30
    pieces = split_text(text, max_tokens=40, overlap=0)
    assert all(p.endswith(".") for p in pieces[:-1])
    assert "".join(" " + p for p in pieces).split() == text.split()


def test_no_overlap_means_a_partition():
    text = " ".join(f"w{i}" for i in range(300))
    pieces = split_text(text, max_tokens=30, overlap=0)
    assert " ".join(pieces).split() == text.split()


def test_bad_parameters():
    with pytest.raises(ValueError):
        split_text("x", max_tokens=10, overlap=10)
    with pytest.raises(ValueError):
        split_text("x", max_tokens=0)
    assert split_text("   ", 10, 2) == []


def test_chunks_stay_inside_their_content_object_and_carry_refs():
    objects = [
        ContentObject(text="first " * 100, context_ref="page 1"),
        ContentObject(text="a | b\n1 | 2", context_ref="table 1", content_type="table"),
    ]
    chunks = chunk_objects(objects, max_tokens=30, overlap=5)
    assert [c.seq for c in chunks] == list(range(len(chunks)))
    assert chunks[-1].context_ref == "table 1" and chunks[-1].content_type == "table"
    assert all("a | b" not in c.text for c in chunks[:-1])
    assert chunks[0].content_hash == content_hash("  " + chunks[0].text + "\n")


@settings(max_examples=30, deadline=None)
@given(
    words=st.lists(
        st.text(alphabet="abcdefgh.,!? 0123", min_size=1, max_size=12), min_size=1, max_size=120
    ),
    max_tokens=st.integers(min_value=5, max_value=60),
    data=st.data(),
)
def test_property_budget_and_coverage(words, max_tokens, data):
    overlap = data.draw(st.integers(min_value=0, max_value=max_tokens - 1))
    text = " ".join(words)
    pieces = split_text(text, max_tokens=max_tokens, overlap=overlap)
    for piece in pieces:
        units = count_text_tokens(piece)
        # a single unit longer than the budget may stand alone
        assert units <= max_tokens or len(_tokens(piece)) == 1 or " " not in piece.strip()
    # spans are in order and cover the text with nothing but whitespace between them
    spans = split_spans(text, max_tokens=max_tokens, overlap=overlap)
    assert [text[a:b] for a, b in spans] == pieces
    if not text.strip():
        assert spans == []
        return
    assert text[: spans[0][0]].strip() == ""
    for (a1, b1), (a2, b2) in itertools.pairwise(spans):
        assert a1 < a2 and b1 < b2
        assert a2 <= b1 or text[b1:a2].strip() == ""
        if overlap == 0:
            assert a2 >= b1
    assert text[spans[-1][1] :].strip() == ""


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="abzÄäöüßÀÿ 09٣.,;-–€\n\t漢字한αβ", max_size=80))
def test_unit_costs_add_up_to_the_counter_of_the_whole_text(text):
    # the chunker prices each unit from its class (letters, digits, anything else): the text
    # fits one piece at exactly the counter's total, and not at one token less
    total = count_text_tokens(text.strip())
    units = len(_tokens(text))
    if not text.strip():
        return
    assert len(split_spans(text, max_tokens=total, overlap=0)) == 1
    if units > 1 and total > 1:
        assert len(split_spans(text, max_tokens=total - 1, overlap=0)) > 1


def test_chunking_leaves_the_token_memo_alone():
    from nyla.ai import tokens

    info = tokens._count_short.cache_info
    before = info()
    words = " ".join(f"Wort{i} {i * 7919}" for i in range(400))
    pieces = split_text(words, max_tokens=50, overlap=5)
    assert len(pieces) > 10
    after = info()
    assert (after.hits, after.misses, after.currsize) == (
        before.hits,
        before.misses,
        before.currsize,
    )
