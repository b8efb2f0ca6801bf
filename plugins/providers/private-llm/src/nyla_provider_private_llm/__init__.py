"""Any OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp, LM Studio): data stays on premises."""
