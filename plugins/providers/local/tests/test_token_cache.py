"""The static model's token cache gives exactly the ids of a plain ``tokenizer.encode`` (so the
embeddings do not change), on a real corpus, on awkward text and on generated text."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nyla_provider_local import static_model
from nyla_provider_local.static_model import TokenCache

pytestmark = pytest.mark.skipif(
    static_model.missing_reason() is not None, reason=str(static_model.missing_reason())
)

DOCS = Path(__file__).resolve().parents[4] / "bench" / "retrieval" / "docs"
TRICKY = [
    "",
    " ",
    "  ",
    "\n",
    "\t",
    "a",
    " a",
    "a ",
    "  a  ",
    "a  b",
    "a   b    c",
    "a \n b",
    "a\n\nb",
    "a\tb\t c",
    " \t\n x \r\n",
    "line one\nline two\n\n  indented\n",
    "Cafe\u0301 cafe\u0301 e\u0301 \u0301x \u0301",  # combining marks, one after a space
    "naïve Ñandú Straße ΑΒΓ Ωμέγα Привет мир",
    "emoji 👍🏽 👨‍👩‍👧 🇨🇭 family👨‍👩‍👧x",
    "中文文本 日本語のテキスト 한국어 텍스트",
    "x" * 5000,
    "supercalifragilisticexpialidocious" * 20 + " tail",
    "1234567890 3.14159 1e-10 0x1F 2,6 100000000000000000",
    "!!! ??? ... --- ***  ((( ))) [[x]] {y} <<>> /// \\\\ ||| ~~~ ``` ### @@",
    "▁ ▁▁ a▁b ▁a",  # the metaspace itself in the text
    "▁",
    "a▁ b",
    "a ▁ ▁b  ▁",
    "\u00a0nbsp\u00a0 \u2003em\u2002space \u200bzero\u200bwidth",
    "<s> x </s> y <unk> z",  # added tokens: plain encode
    "a<s>b",
    "<s",
    "Rechnung 781 ist bezahlt.\nread_a: read 781 ok\nread_b: read 782 ok",
]


def plain(text: str) -> list[int]:
    tokens, _ = static_model._load()
    return list(tokens.tokenizer.encode(text, add_special_tokens=False).ids)


def cached(cache: TokenCache, text: str) -> list[int]:
    from array import array

    ids = array("i")
    ids.frombytes(cache.encode(text))
    return ids.tolist()


def fresh(max_pieces: int = static_model.MAX_PIECES) -> TokenCache:
    tokens, _ = static_model._load()
    return TokenCache(tokens.tokenizer, max_pieces)


def corpus() -> list[str]:
    if not DOCS.is_dir():
        pytest.skip(f"{DOCS} is not here (the plugin's tests run from the repository)")
    docs = [p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))]
    lines = [line for doc in docs for line in doc.splitlines()]
    sentences = [s for doc in docs for s in re.split(r"(?<=[.!?])\s+", doc)]
    return docs + lines + sentences + ["\n\n".join(docs * 6)]  # the last is over 8192 tokens


def test_the_shipped_tokenizer_is_one_the_cache_is_exact_for() -> None:
    tokens, _ = static_model._load()
    assert static_model.why_not_exact(tokens.tokenizer) is None
    assert tokens.not_exact is None


def test_the_corpus_gets_the_plain_ids_the_first_time_and_from_the_kept_pieces() -> None:
    cache = fresh()
    texts = corpus()
    assert len(plain(texts[-1])) == static_model.MAX_TOKENS  # truncated as encode truncates
    for _ in range(2):  # the second pass is served from the kept pieces
        for text in texts:
            assert cached(cache, text) == plain(text), text
    assert 0 < len(cache._pieces) <= static_model.MAX_PIECES


@pytest.mark.parametrize("text", TRICKY)
def test_awkward_text_gets_the_plain_ids(text: str) -> None:
    cache = fresh()
    assert cached(cache, text) == plain(text)
    assert cached(cache, text) == plain(text)
    assert cached(cache, f"x {text} y") == plain(f"x {text} y")


def test_a_full_cache_is_emptied_and_stays_exact() -> None:
    cache = fresh(max_pieces=5)
    texts = [line for line in corpus() if line.strip()][:300]
    for text in texts + texts[::-1]:
        assert cached(cache, text) == plain(text)
        assert len(cache._pieces) <= 5


def test_threads_sharing_one_cache_get_the_plain_ids() -> None:
    cache = fresh(max_pieces=50)  # emptied often while other threads read it
    texts = [line for line in corpus() if line.strip()]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda t: cached(cache, t), texts * 3))
    assert got == [plain(t) for t in texts * 3]


WORDS = st.text(
    st.sampled_from("aeiou xyzAEQ01239.,;:!?-_'\"()<>/s\\\n\t\r\u00a0▁é\u0301ßΩж中文👍🏽\u200d"),
    max_size=12,
)
SEPARATORS = st.text(st.sampled_from(" \n\t"), max_size=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(WORDS, SEPARATORS), max_size=30))
def test_generated_words_and_whitespace_get_the_plain_ids(parts: list[tuple[str, str]]) -> None:
    text = "".join(word + gap for word, gap in parts)
    cache = fresh(max_pieces=64)
    assert cached(cache, text) == plain(text)
    assert cached(cache, text) == plain(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_generated_unicode_gets_the_plain_ids(text: str) -> None:
    assert cached(fresh(), text) == plain(text)


def test_embeddings_with_the_cache_are_those_of_plain_encodes(monkeypatch) -> None:
    texts = corpus()
    with_cache = static_model.embed_texts(texts)
    tokens, _ = static_model._load()
    monkeypatch.setattr(tokens, "not_exact", "forced off")  # every text gets a plain encode
    assert static_model.embed_texts(texts) == with_cache


def merging_tokenizer(merges: list[list[str]], normalizer: object = None):  # type: ignore[no-untyped-def]
    """A small BPE tokenizer with the static model's normalizer and the given merges."""
    from tokenizers import Tokenizer

    chars = sorted({c for pair in merges for c in "".join(pair)} | set("ab▁"))
    vocab = {c: i for i, c in enumerate(chars)}
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    spec = {
        "version": "1.0",
        "added_tokens": [],
        "normalizer": normalizer or static_model.NORMALIZER,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": None,
        "model": {"type": "BPE", "vocab": vocab, "merges": merges, "byte_fallback": False},
    }
    return Tokenizer.from_str(json.dumps(spec))


def test_a_merge_across_a_words_start_turns_the_cache_off() -> None:
    # "a" + "▁b" would be merged across the piece boundary: per-piece ids would differ
    crossing = merging_tokenizer([["▁", "b"], ["a", "▁b"]])
    assert "joins a character" in str(static_model.why_not_exact(crossing))
    cache = TokenCache(crossing)
    want = crossing.encode("a b", add_special_tokens=False).ids
    assert len(want) == 2  # "▁" "a▁b": what splitting at the space would have got wrong
    assert cached(cache, "a b") == want
    assert static_model.why_not_exact(merging_tokenizer([["▁", "b"], ["▁", "a"]])) is None


def test_another_normalizer_turns_the_cache_off() -> None:
    lowering = {
        "type": "Sequence",
        "normalizers": [{"type": "Lowercase"}, *static_model.NORMALIZER["normalizers"]],  # type: ignore[index]
    }
    tokenizer = merging_tokenizer([["▁", "a"]], normalizer=lowering)
    assert "normalizer" in str(static_model.why_not_exact(tokenizer))
    assert cached(TokenCache(tokenizer), "A b") == tokenizer.encode("A b").ids
