"""OpenAI models: chat with tools and streaming, embeddings, image generation."""
