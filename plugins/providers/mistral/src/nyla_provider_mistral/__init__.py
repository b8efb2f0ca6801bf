"""Mistral models: chat with tools, embeddings."""
