"""The base class provider plugins build on.

:class:`ProviderBase` holds what every vendor provider repeats: the API key and base URL
looked up from the environment or the user config file, the reason its models are unavailable
when a setting is missing, and ``NotImplementedError`` for every call the vendor does not
offer. A subclass sets the class attributes, lists its models in :meth:`catalog` and
implements the calls its models support (see :class:`~nyla.models.ai.Provider`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from nyla.config import config_value, missing_reason
from nyla.errors import ProviderAuthError
from nyla.models.ai import (
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ImagePart,
    ModelSpec,
    StreamDelta,
    WebSearchHit,
)


class ProviderBase:
    """Configuration and defaults shared by provider plugins.

    Subclasses set ``id``, ``key_var`` (the API key variable, ``None`` when the endpoint needs
    none), optionally ``base_url_var`` / ``default_base_url``, and implement :meth:`catalog`.
    Everything is configurable per instance (``api_key``, ``base_url``, ``transport`` for
    tests, ``timeout_s``).
    """

    id: str = "provider"
    key_var: str | None = None
    #: whether calls need the key (a local server usually takes none)
    key_required: bool = True
    base_url_var: str | None = None
    default_base_url: str | None = None
    timeout_s: float = 120.0

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        transport: Any = None,
        timeout_s: float | None = None,
    ) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._transport = transport
        if timeout_s is not None:
            self.timeout_s = timeout_s

    @property
    def api_key(self) -> str | None:
        """The API key (explicit, else from the environment / config file)."""
        if self._api_key:
            return self._api_key
        return config_value(self.key_var) if self.key_var else None

    @property
    def base_url(self) -> str | None:
        """The endpoint's base URL (explicit, else the setting, else the default)."""
        url = self._base_url or (config_value(self.base_url_var) if self.base_url_var else None)
        url = url or self.default_base_url
        return url.rstrip("/") if url else None

    def missing_configuration(self) -> str | None:
        """Why the models cannot be called, or ``None`` when configured."""
        if self.base_url is None and self.base_url_var:
            return missing_reason(self.base_url_var)
        if self.key_var and self.key_required and not self.api_key:
            return missing_reason(self.key_var)
        return None

    def require_configuration(self) -> None:
        """Raise :class:`~nyla.errors.ProviderAuthError` naming the missing setting."""
        reason = self.missing_configuration()
        if reason is not None:
            missing_url = self.base_url is None and self.base_url_var
            env_var = self.base_url_var if missing_url else self.key_var
            raise ProviderAuthError(f"{self.id}: {reason}", env_var=env_var, provider=self.id)

    def catalog(self) -> list[ModelSpec]:
        """The models this provider offers (availability is filled in by :meth:`models`)."""
        raise NotImplementedError("subclasses list their models")

    def models(self) -> list[ModelSpec]:
        """The catalog, marked unavailable (with the variable to set) when not configured."""
        reason = self.missing_configuration()
        specs = self.catalog()
        if reason is None:
            return specs
        return [
            s.model_copy(update={"available": False, "unavailable_reason": reason}) for s in specs
        ]

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Not offered unless a subclass implements it."""
        raise NotImplementedError(f"{self.id} does not offer chat")

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]:
        """Not offered unless a subclass implements it."""
        raise NotImplementedError(f"{self.id} does not offer streaming")
        yield  # pragma: no cover - makes this an async generator like the real ones

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        """Not offered unless a subclass implements it."""
        raise NotImplementedError(f"{self.id} does not offer embeddings")

    async def web_search(self, model: str, query: str, max_results: int = 5) -> list[WebSearchHit]:
        """Not offered unless a subclass implements it."""
        raise NotImplementedError(f"{self.id} does not offer web search")

    async def generate_image(
        self, model: str, prompt: str, *, size: str = "1024x1024"
    ) -> list[ImagePart]:
        """Not offered unless a subclass implements it."""
        raise NotImplementedError(f"{self.id} does not generate images")
