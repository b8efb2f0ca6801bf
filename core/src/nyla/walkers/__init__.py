"""The walker runner: syncs data sources with RAG indexing on into the knowledge store
through their connector's ``sync`` (checkpoints, limits, unchanged items, tombstones, a
safe deletion sweep)."""
