"""The third-party side of bench/retrieval_ndcg.py, run in the bench venv ``bench/.venvs/ir``:

    bench/.venvs/ir/bin/python bench/retrieval_contenders.py IN.json OUT.json

IN holds nyla's chunks (file name, text, static-model vector) and the questions; every system
here searches those same chunks and returns, per question, the files of its best chunks in
rank order (the first ten distinct files):

- ``bm25s``: BM25 (Lucene variant, k1=1.5, b=0.75) over words of two letters or more,
  lower-cased, German and English stop words (bm25s' lists) removed, stemmed with the
  Snowball stemmer (PyStemmer) of the text's language (German when it has more German than
  English stop words, else English; the same rule for questions);
- ``llamaindex hybrid``: the chunks as ``TextNode``s with their vectors in ``PGVectorStore``
  (``hybrid_search=True``, its default ``english`` text-search configuration), queried through
  ``VectorStoreIndex.as_retriever(vector_store_query_mode="hybrid")`` with the same static
  embedder (10 dense + 10 sparse hits: the store appends the keyword hits to the vector hits);
- ``llamaindex fusion``: the fusion its documentation recommends for that store,
  ``QueryFusionRetriever(mode="relative_score", num_queries=1)`` over a vector and a sparse
  (``text_search``) retriever of the same store.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

K = 10
WORD = re.compile(r"\w\w+")


def distinct_files(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))[:K]


def bm25(chunks: list[dict[str, Any]], questions: list[str]) -> list[list[str]]:
    import bm25s
    import Stemmer
    from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_GERMAN

    german, english = set(STOPWORDS_GERMAN), set(STOPWORDS_EN)
    stop = german | english
    stemmers = {"de": Stemmer.Stemmer("german"), "en": Stemmer.Stemmer("english")}

    def tokens(text: str) -> list[str]:
        words = WORD.findall(text.lower())
        de = sum(w in german for w in words)
        en = sum(w in english for w in words)
        stemmer = stemmers["de" if de > en else "en"]
        return stemmer.stemWords([w for w in words if w not in stop])  # type: ignore[no-any-return]

    retriever = bm25s.BM25()
    retriever.index([tokens(c["text"]) for c in chunks], show_progress=False)
    out = []
    for question in questions:
        query = tokens(question)
        if not query:
            out.append([])
            continue
        ids, scores = retriever.retrieve([query], k=min(4 * K, len(chunks)), show_progress=False)
        names = [chunks[int(i)]["file"] for i, s in zip(ids[0], scores[0], strict=True) if s > 0]
        out.append(distinct_files(names))
    return out


def llamaindex(chunks: list[dict[str, Any]], questions: list[str], uri: str,
               schema: str) -> dict[str, list[list[str]]]:  # fmt: skip
    from ingest_llamaindex import StaticEmbedding, store
    from llama_index.core import VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.schema import TextNode

    vector_store = store(uri, schema)
    nodes = [
        TextNode(text=c["text"], embedding=c["vector"], metadata={"file_name": c["file"]})
        for c in chunks
    ]
    for start in range(0, len(nodes), 1000):
        vector_store.add(nodes[start : start + 1000])
    embed = StaticEmbedding(embed_batch_size=64)
    index = VectorStoreIndex.from_vector_store(vector_store, embed_model=embed)
    hybrid = index.as_retriever(
        vector_store_query_mode="hybrid", similarity_top_k=K, sparse_top_k=K
    )
    fusion = QueryFusionRetriever(
        [
            index.as_retriever(vector_store_query_mode="default", similarity_top_k=2 * K),
            index.as_retriever(vector_store_query_mode="sparse", similarity_top_k=2 * K),
        ],
        similarity_top_k=2 * K,
        num_queries=1,
        mode="relative_score",
        use_async=False,
        llm=MockLLM(),  # one query: no rewriting, the LLM is never called
    )
    out: dict[str, list[list[str]]] = {"llamaindex hybrid": [], "llamaindex fusion": []}
    for question in questions:
        for name, retriever in (("llamaindex hybrid", hybrid), ("llamaindex fusion", fusion)):
            hits = retriever.retrieve(question)
            out[name].append(distinct_files([h.node.metadata["file_name"] for h in hits]))
    return out


def main() -> None:
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    data = json.loads(source.read_text(encoding="utf-8"))
    chunks, questions = data["chunks"], data["questions"]
    rankings = {"bm25s": bm25(chunks, questions)}
    rankings.update(llamaindex(chunks, questions, data["uri"], data["schema"]))
    target.write_text(json.dumps(rankings), encoding="utf-8")


if __name__ == "__main__":
    main()
