"""A provider for any OpenAI-compatible endpoint on the user's own infrastructure (Ollama,
vLLM, llama.cpp server, LM Studio): the provider to allow when data must stay on premises.

Configuration (environment or the user config file):

- ``NYLA_PRIVATE_LLM_BASE_URL`` (required), e.g. ``http://localhost:11434/v1``
- ``NYLA_PRIVATE_LLM_API_KEY`` (optional; most local servers take none)
- ``NYLA_PRIVATE_LLM_MODELS``: chat models, comma-separated (default ``llama3.1:8b``)
- ``NYLA_PRIVATE_LLM_EMBED_MODELS``: embedding models as ``name=dimensions``, comma-separated
- ``NYLA_PRIVATE_LLM_RERANK_MODELS``: reranking models (cross-encoders), comma-separated,
  served at ``POST {base}/rerank`` in the Jina/Cohere shape vLLM's server speaks
  (``{"model", "query", "documents", "top_n"}`` -> ``{"results": [{"index",
  "relevance_score"}], "usage": {"total_tokens"}}``)
- ``NYLA_PRIVATE_LLM_CONTEXT_WINDOW`` (default 32768), ``NYLA_PRIVATE_LLM_TOOLS`` (``1``/``0``,
  default 1: whether the chat models support native tool calls)
- ``NYLA_PRIVATE_LLM_TOOL_CHOICE`` (default 0: Ollama ignores ``tool_choice``; vLLM honours it)
  and ``NYLA_PRIVATE_LLM_JSON`` (default 1: ``response_format`` json_object and json_schema,
  as Ollama and vLLM take them); stop sequences are always sent (every such server takes
  ``stop``)
"""

from __future__ import annotations

from typing import Any

from nyla.sdk import (
    TEXT_OPERATIONS,
    ConfigurationError,
    ModelCapabilities,
    ModelNotAvailableError,
    ModelSpec,
    OpenAICompatibleProvider,
    OperationType,
    ProviderError,
    RerankResponse,
    RerankScore,
    Usage,
    config_value,
    vendor_model,
)

CHAT_OPERATIONS = list(TEXT_OPERATIONS)


def _int(name: str, default: int) -> int:
    raw = config_value(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be an integer, got {raw!r}") from None


def _flag(name: str, default: bool) -> bool:
    raw = config_value(name)
    if raw is None:
        return default
    return raw.strip().lower() not in ("0", "false", "no", "off", "")


def _names(raw: str | None) -> list[str]:
    return [p.strip() for p in (raw or "").split(",") if p.strip()]


class PrivateLlmProvider(OpenAICompatibleProvider):
    """Chat (with tools and streaming) and embeddings on a self-hosted endpoint."""

    id = "private-llm"
    key_var = "NYLA_PRIVATE_LLM_API_KEY"
    key_required = False
    base_url_var = "NYLA_PRIVATE_LLM_BASE_URL"
    default_base_url = None

    def __init__(
        self,
        *,
        models: list[str] | None = None,
        embedding_models: dict[str, int] | None = None,
        tool_choice: bool | None = None,
        json_output: bool | None = None,
        rerank_models: list[str] | None = None,
        **kw,
    ) -> None:
        super().__init__(**kw)
        self._chat_models = models
        self._embedding_models = embedding_models
        self._rerank_models = rerank_models
        self._tool_choice = tool_choice
        self._json_output = json_output

    def chat_models(self) -> list[str]:
        """Configured chat model names."""
        if self._chat_models is not None:
            return self._chat_models
        return _names(config_value("NYLA_PRIVATE_LLM_MODELS")) or ["llama3.1:8b"]

    def embedding_models(self) -> dict[str, int]:
        """Configured embedding model names with their dimensions."""
        if self._embedding_models is not None:
            return self._embedding_models
        out: dict[str, int] = {}
        for item in _names(config_value("NYLA_PRIVATE_LLM_EMBED_MODELS")):
            name, _, dims = item.rpartition("=")
            try:
                out[name] = int(dims)
            except ValueError:
                raise ConfigurationError(
                    f"NYLA_PRIVATE_LLM_EMBED_MODELS: {item!r} is not name=dimensions"
                ) from None
        return out

    def rerank_models(self) -> list[str]:
        """Configured reranking model names."""
        if self._rerank_models is not None:
            return self._rerank_models
        return _names(config_value("NYLA_PRIVATE_LLM_RERANK_MODELS"))

    async def rerank(
        self, model: str, query: str, documents: list[str], *, top_n: int | None = None
    ) -> RerankResponse:
        """One rerank call: ``documents`` scored against ``query``, most relevant first."""
        spec = self.spec_for(model)
        if spec is None or OperationType.RERANK not in spec.operation_types:
            raise ModelNotAvailableError(f"{model!r} is not a reranking model of {self.id}")
        payload: dict[str, Any] = {
            "model": vendor_model(self.id, model),
            "query": query,
            "documents": documents,
        }
        if top_n is not None:
            payload["top_n"] = top_n
        data = await self._post("/rerank", payload)
        try:
            results = [
                RerankScore(index=int(r["index"]), score=float(r["relevance_score"]))
                for r in data.get("results") or []
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise ProviderError(
                f"{self.id} answered a rerank without index/relevance_score: {str(data)[:200]}",
                provider=self.id,
            ) from exc
        usage = data.get("usage") or {}
        tokens = int(usage.get("prompt_tokens") or usage.get("total_tokens") or 0)
        return RerankResponse(results=results, model=spec.id, usage=Usage(input_tokens=tokens))

    def catalog(self) -> list[ModelSpec]:
        """The configured models; on-premises models cost nothing per token."""
        window = _int("NYLA_PRIVATE_LLM_CONTEXT_WINDOW", 32_768)
        tools = config_value("NYLA_PRIVATE_LLM_TOOLS", "1") not in ("0", "false", "no")
        tool_choice = self._tool_choice
        if tool_choice is None:
            tool_choice = _flag("NYLA_PRIVATE_LLM_TOOL_CHOICE", False)
        json_output = self._json_output
        if json_output is None:
            json_output = _flag("NYLA_PRIVATE_LLM_JSON", True)
        specs = [
            ModelSpec(
                id=f"{self.id}:{name}",
                provider=self.id,
                name=name,
                operation_types=CHAT_OPERATIONS,
                context_window=window,
                max_output_tokens=min(8192, window // 2),
                price_input_chf_per_mtok=0.0,
                price_output_chf_per_mtok=0.0,
                capabilities=ModelCapabilities(
                    tools=tools,
                    streaming=True,
                    tool_choice=tools and tool_choice,
                    stop_sequences=True,
                    json_mode=json_output,
                    structured_output=json_output,
                ),
                quality_rank=30,
                speed_rank=40,
                on_premises=True,
            )
            for name in self.chat_models()
        ]
        specs += [
            ModelSpec(
                id=f"{self.id}:{name}",
                provider=self.id,
                name=name,
                operation_types=[OperationType.EMBEDDING],
                context_window=8192,
                max_output_tokens=0,
                price_input_chf_per_mtok=0.0,
                price_output_chf_per_mtok=0.0,
                capabilities=ModelCapabilities(embedding_dimensions=dims, max_batch_size=64),
                quality_rank=30,
                speed_rank=40,
                on_premises=True,
            )
            for name, dims in self.embedding_models().items()
        ]
        specs += [
            ModelSpec(
                id=f"{self.id}:{name}",
                provider=self.id,
                name=name,
                operation_types=[OperationType.RERANK],
                context_window=8192,
                max_output_tokens=0,
                price_input_chf_per_mtok=0.0,
                price_output_chf_per_mtok=0.0,
                quality_rank=30,
                speed_rank=40,
                on_premises=True,
            )
            for name in self.rerank_models()
        ]
        return specs
