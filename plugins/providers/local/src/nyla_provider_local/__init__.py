"""Offline embeddings: a deterministic hashing embedder, optionally all-MiniLM-L6-v2."""
