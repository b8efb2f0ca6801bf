"""LlamaIndex's side of bench/ingest.py, run in the bench venv ``bench/.venvs/ir``:

    bench/.venvs/ir/bin/python bench/ingest_llamaindex.py FOLDER --uri URI --schema S --out J

``SimpleDirectoryReader`` (recursive) reads the folder, an ``IngestionPipeline`` of a
``SentenceSplitter`` (300 tokens, 40 overlap: nyla's defaults) and ``StaticEmbedding`` (the
WordLlama static model nyla uses by default, through the very same
``nyla_provider_local/static_model.py``, loaded by path) writes into ``PGVectorStore`` with
hybrid search (its tsvector column) and an HNSW index, as nyla's store has both. Writes the
counts and the time of each phase as JSON.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

STARTED = time.perf_counter()

from llama_index.core import SimpleDirectoryReader  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.ingestion import IngestionPipeline  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.vector_stores.postgres import PGVectorStore  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
STATIC_MODEL = (
    REPO / "plugins/providers/local/src/nyla_provider_local/static_model.py"
)  # fmt: skip
CHUNK_TOKENS, OVERLAP_TOKENS = 300, 40
BATCH = 64  # knowledge settings embed_batch: the batches nyla's indexer embeds in


@functools.cache
def static_model() -> Any:
    """nyla's static_model module, loaded once from its file (no nyla import needed)."""
    spec = importlib.util.spec_from_file_location("static_model", STATIC_MODEL)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class StaticEmbedding(BaseEmbedding):
    """nyla's default offline embedder (WordLlama l2 256 dims) as a LlamaIndex embedding."""

    def _embed(self, texts: list[str]) -> list[list[float]]:
        return static_model().embed_texts(texts)  # type: ignore[no-any-return]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embed([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embed([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embed(texts)


def sa_urls(uri: str) -> tuple[str, str]:
    """(psycopg2, asyncpg) SQLAlchemy URLs for a libpq ``postgresql://`` URI."""
    tail = uri.split("://", 1)[1].replace("postgres:@", "postgres@", 1)
    return f"postgresql+psycopg2://{tail}", f"postgresql+asyncpg://{tail}"


def store(uri: str, schema: str, table: str = "chunks", config: str = "english") -> Any:
    sync_url, async_url = sa_urls(uri)
    return PGVectorStore.from_params(
        connection_string=sync_url,
        async_connection_string=async_url,
        schema_name=schema,
        table_name=table,
        embed_dim=256,
        hybrid_search=True,
        text_search_config=config,
        hnsw_kwargs={"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_dist_method": "vector_cosine_ops"},
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--uri", required=True)
    parser.add_argument("--schema", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    imported = time.perf_counter()
    static_model().embed_texts(["warm"])  # loads the weights, as nyla's first embed does
    loaded = time.perf_counter()
    documents = SimpleDirectoryReader(str(args.folder), recursive=True).load_data()
    read = time.perf_counter()
    pipeline = IngestionPipeline(
        transformations=[
            SentenceSplitter(chunk_size=CHUNK_TOKENS, chunk_overlap=OVERLAP_TOKENS),
            StaticEmbedding(embed_batch_size=BATCH),
        ],
        vector_store=store(args.uri, args.schema),
    )
    nodes = pipeline.run(documents=documents)
    done = time.perf_counter()
    args.out.write_text(
        json.dumps(
            {
                "files": len(documents),
                "chunks": len(nodes),
                "import_s": imported - STARTED,
                "model_s": loaded - imported,
                "read_s": read - loaded,
                "pipeline_s": done - read,
            }
        )
    )


if __name__ == "__main__":
    main()
