"""The static WordLlama model: offline, the default when tests do not ask for the hashing
embedder, and semantically useful beyond shared words — in German as in English."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from nyla_provider_local import LocalProvider, static_model

pytestmark = pytest.mark.skipif(
    static_model.missing_reason() is not None, reason=str(static_model.missing_reason())
)

DOCUMENTS = {
    "offsite": "The team offsite takes place in Interlaken in June.",
    "vat": "Books are taxed at the reduced VAT rate of 2.6 percent in Switzerland.",
    "offsite-de": "Das Team-Offsite findet im Juni in Interlaken statt.",
    "vat-de": "Bücher unterliegen dem reduzierten Mehrwertsteuersatz von 2,6 Prozent.",
    "revenue-de": "Die Umsatzzahlen des Quartals zeigen ein deutliches Wachstum.",
}
#: questions that share few or no words with the document they are about
QUESTIONS = {
    "Wo findet das Teamtreffen statt?": "offsite-de",
    "Welcher Steuersatz gilt für Bücher?": "vat-de",
    "Wie hat sich der Umsatz entwickelt?": "revenue-de",
    "which VAT rate do I have to charge on books in Switzerland?": "vat",
}


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_the_static_model_ranks_by_meaning_in_german_and_english() -> None:
    provider = LocalProvider()
    names = list(DOCUMENTS)
    docs = await provider.embed("local:wordllama-l2-256", list(DOCUMENTS.values()))
    asked = await provider.embed("local:wordllama-l2-256", list(QUESTIONS))
    assert docs.dimensions == asked.dimensions == 256
    for vector, expected in zip(asked.vectors, QUESTIONS.values(), strict=True):
        ranked = sorted(names, key=lambda n: -cosine(vector, docs.vectors[names.index(n)]))
        assert ranked[0] == expected, ranked


def test_vectors_are_unit_length_deterministic_and_empty_text_is_zero() -> None:
    first = static_model.embed_texts(["Die Rechnung ist überfällig.", ""])
    again = static_model.embed_texts(["Die Rechnung ist überfällig."])
    assert math.sqrt(sum(v * v for v in first[0])) == pytest.approx(1.0, abs=1e-5)
    assert first[0] == again[0]
    assert first[1] == [0.0] * 256


def test_it_is_the_offline_default_unless_hash_is_asked_for(monkeypatch) -> None:
    monkeypatch.delenv("NYLA_LOCAL_EMBEDDINGS", raising=False)
    specs = {s.id: s for s in LocalProvider().models()}
    static, hashed = specs["local:wordllama-l2-256"], specs["local:hash-384"]
    assert static.available and static.quality_rank > hashed.quality_rank
    monkeypatch.setenv("NYLA_LOCAL_EMBEDDINGS", "hash")
    assert "local:wordllama-l2-256" not in {s.id for s in LocalProvider().models()}


def test_embedding_never_imports_wordllama_nor_touches_the_network() -> None:
    # wordllama configures the root logger on import and downloads files it misses
    code = (
        "import socket, sys\n"
        "socket.socket.connect = lambda *a, **k: (_ for _ in ()).throw(OSError('network'))\n"
        "from nyla_provider_local import static_model\n"
        "assert len(static_model.embed_texts(['Hallo Welt'])[0]) == 256\n"
        "assert 'wordllama' not in sys.modules, sorted(m for m in sys.modules if 'word' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


async def test_a_few_short_texts_are_embedded_on_the_loop_once_loaded(monkeypatch) -> None:
    from nyla_provider_local import provider as module

    provider = LocalProvider()
    many = [f"Rechnung {i} ist bezahlt." for i in range(module.INLINE_TEXTS + 1)]
    threaded = await provider.embed("local:wordllama-l2-256", many)  # loads the weights
    assert static_model.loaded()

    def no_thread(*args: object, **kwargs: object) -> None:
        raise AssertionError("a thread was started for a small batch")

    monkeypatch.setattr(module.asyncio, "to_thread", no_thread)
    inline = await provider.embed("local:wordllama-l2-256", many[:2])
    assert inline.vectors == threaded.vectors[:2]
    with pytest.raises(AssertionError, match="thread"):
        await provider.embed("local:wordllama-l2-256", many)


def test_a_loaded_model_is_available_without_looking_for_its_files(monkeypatch) -> None:
    static_model.embed_texts(["load"])
    monkeypatch.setattr(static_model, "package_dir", lambda: None)
    assert static_model.missing_reason() is None
    monkeypatch.setattr(static_model, "_model", None)
    assert "not installed" in str(static_model.missing_reason())


def test_the_weights_embed_as_a_float32_copy_of_the_files_would() -> None:
    import numpy as np

    tokens, table = static_model._load()
    tokenizer = tokens.tokenizer
    root = static_model.package_dir()
    assert root is not None
    raw = (root / static_model.WEIGHTS).read_bytes()
    size = int.from_bytes(raw[:8], "little")
    half = np.frombuffer(raw, dtype="<f2", offset=8 + size).reshape(table.shape)
    texts = list(DOCUMENTS.values())
    wide = half.astype(np.float32)
    sums = np.stack([wide[tokenizer.encode(t, add_special_tokens=False).ids].sum(0) for t in texts])
    sums /= np.linalg.norm(sums, axis=1, keepdims=True)
    assert np.array_equal(np.asarray(static_model.embed_texts(texts), dtype=np.float32), sums)


def test_the_table_holds_only_the_rows_used_and_each_as_the_file_has_it() -> None:
    import numpy as np

    root = static_model.package_dir()
    assert root is not None
    table = static_model._read_table(root / static_model.WEIGHTS)
    assert table.shape == (32000, 256) and table.stored == np.float16
    raw = (root / static_model.WEIGHTS).read_bytes()
    size = int.from_bytes(raw[:8], "little")
    whole = np.frombuffer(raw, dtype="<f2", offset=8 + size).reshape(table.shape)
    ids = np.array([5, 31999, 5, 1234], dtype=np.intp)
    taken = table.take(ids)
    assert taken.dtype == np.float32  # widened exactly: each value is the file's
    assert np.array_equal(taken, whole[ids]) and np.array_equal(
        taken.astype(np.float16), whole[ids]
    )
    assert int(table._read.sum()) == 3  # the rows asked for, nothing else
    untouched = table._rows[6:1234]
    assert not untouched.any()  # never read: still the mapping's zero pages
    assert np.array_equal(table.full(), whole)


def test_a_cut_weights_file_is_refused(tmp_path) -> None:
    root = static_model.package_dir()
    assert root is not None
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes((root / static_model.WEIGHTS).read_bytes()[:-512])
    with pytest.raises(ValueError, match="do not fit"):
        static_model._read_table(cut)
