"""The OpenAI chat-completions wire format, which many vendors speak (OpenAI, Perplexity,
Mistral's shape, Ollama, vLLM, llama.cpp server, LM Studio): conversion of nyla's normalized
messages and tools to it, parsing of its answers and streamed chunks, and
:class:`OpenAICompatibleProvider`, a complete httpx-based provider for such endpoints that
plugins subclass with their model catalog.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

from nyla.errors import ModelNotAvailableError, ProviderError, ProviderServerError
from nyla.models.ai import (
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ImagePart,
    Message,
    ModelSpec,
    Role,
    StreamDelta,
    TextPart,
    ToolCall,
    ToolDefinition,
    Usage,
)
from nyla.models.chat_options import ResponseFormat, ToolChoice
from nyla.sdk.http import (
    error_for_transport,
    raise_for_response,
    sse_events,
    vendor_model,
)
from nyla.sdk.providers import ProviderBase

# ---- requests -------------------------------------------------------------------------------


def image_url(part: ImagePart) -> str:
    """A URL for an image part (``data:`` URL for inline base64)."""
    if part.url:
        return part.url
    return f"data:{part.mime_type};base64,{part.data_base64 or ''}"


def to_content(message: Message) -> Any:
    """The ``content`` of a message: a string, or parts when it holds images."""
    if isinstance(message.content, str):
        return message.content
    if all(isinstance(p, TextPart) for p in message.content):
        return message.text
    parts: list[dict[str, Any]] = []
    for p in message.content:
        if isinstance(p, TextPart):
            parts.append({"type": "text", "text": p.text})
        else:
            parts.append({"type": "image_url", "image_url": {"url": image_url(p)}})
    return parts


def to_messages(
    messages: Iterable[Message], *, system_role: str = "system"
) -> list[dict[str, Any]]:
    """nyla messages as chat-completions messages."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role is Role.SYSTEM:
            out.append({"role": system_role, "content": m.text})
        elif m.role is Role.TOOL:
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.text})
        elif m.role is Role.ASSISTANT:
            item: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in m.tool_calls
                ]
            out.append(item)
        else:
            out.append({"role": "user", "content": to_content(m)})
    return out


def to_tools(tools: Iterable[ToolDefinition]) -> list[dict[str, Any]]:
    """nyla tool definitions as chat-completions ``tools``."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]


def to_tool_choice(choice: ToolChoice) -> Any:
    """A :class:`ToolChoice` as chat-completions ``tool_choice``: ``"auto"``, ``"none"``,
    ``"required"`` or ``{"type": "function", "function": {"name": ...}}``."""
    if choice.mode == "tool":
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


def to_response_format(response_format: ResponseFormat) -> dict[str, Any]:
    """A :class:`ResponseFormat` as chat-completions ``response_format``: ``{"type":
    "json_object"}`` or ``{"type": "json_schema", "json_schema": {"name", "schema",
    "strict"}}`` (``{"type": "text"}`` for plain text)."""
    if response_format.type == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {
                "name": response_format.name,
                "schema": response_format.json_schema,
                "strict": response_format.strict,
            },
        }
    return {"type": response_format.type}


def answer_options(request: ChatRequest) -> dict[str, Any]:
    """The chat-completions fields for the request's answer options (``tool_choice`` only
    with tools, as the API requires; ``stop``; ``response_format``)."""
    out: dict[str, Any] = {}
    if request.tool_choice is not None and request.tools:
        out["tool_choice"] = to_tool_choice(request.tool_choice)
    if request.stop:
        out["stop"] = list(request.stop)
    if request.response_format is not None and request.response_format.is_json:
        out["response_format"] = to_response_format(request.response_format)
    return out


# ---- responses ------------------------------------------------------------------------------


def _arguments(raw: Any) -> str:
    # some vendors (Mistral) may send the arguments as an object instead of JSON text
    if raw is None:
        return "{}"
    if isinstance(raw, str):
        return raw
    return json.dumps(raw, ensure_ascii=False)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"
        )
    return str(content)


def parse_usage(data: dict[str, Any] | None) -> Usage:
    """``usage`` of a chat-completions or embeddings answer."""
    if not data:
        return Usage()
    return Usage(
        input_tokens=int(data.get("prompt_tokens") or 0),
        output_tokens=int(data.get("completion_tokens") or 0),
    )


def parse_completion(data: dict[str, Any], *, model: str | None = None) -> ChatResponse:
    """A chat-completions answer as a :class:`ChatResponse`."""
    choices = data.get("choices") or []
    if not choices:
        raise ProviderError(f"answer without choices: {str(data)[:200]}")
    choice = choices[0]
    message = choice.get("message") or {}
    calls = [
        ToolCall(
            id=c.get("id") or f"call_{i}",
            name=(c.get("function") or {}).get("name", ""),
            arguments=_arguments((c.get("function") or {}).get("arguments")),
        )
        for i, c in enumerate(message.get("tool_calls") or [])
    ]
    return ChatResponse(
        content=_text(message.get("content")),
        tool_calls=calls,
        usage=parse_usage(data.get("usage")),
        finish_reason=choice.get("finish_reason"),
        model=model or data.get("model"),
    )


class StreamAssembler:
    """Turns streamed chat-completions chunks into nyla stream deltas: text as it comes, tool
    calls assembled from their argument fragments (by ``index``) at the end, then usage."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, str]] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None

    def feed(self, chunk: dict[str, Any]) -> list[StreamDelta]:
        """Deltas to emit for one chunk."""
        out: list[StreamDelta] = []
        if chunk.get("usage"):
            self.usage = parse_usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text = _text(delta.get("content"))
            if text:
                out.append(StreamDelta(kind="text", text=text))
            for i, c in enumerate(delta.get("tool_calls") or []):
                index = c.get("index", i)
                slot = self._calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                fn = c.get("function") or {}
                if c.get("id"):
                    slot["id"] = c["id"]
                if fn.get("name"):
                    slot["name"] += fn["name"]
                if fn.get("arguments") is not None:
                    slot["arguments"] += _arguments(fn["arguments"])
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return out

    def finish(self) -> list[StreamDelta]:
        """The assembled tool calls, then usage and ``done``."""
        out = [
            StreamDelta(
                kind="tool_call",
                tool_call=ToolCall(
                    id=slot["id"] or f"call_{index}",
                    name=slot["name"],
                    arguments=slot["arguments"] or "{}",
                ),
            )
            for index, slot in sorted(self._calls.items())
        ]
        if self.usage is not None:
            out.append(StreamDelta(kind="usage", usage=self.usage))
        out.append(StreamDelta(kind="done", usage=self.usage, finish_reason=self.finish_reason))
        return out


# ---- a provider for OpenAI-compatible endpoints ---------------------------------------------


class OpenAICompatibleProvider(ProviderBase):
    """A provider for any endpoint speaking the chat-completions API over httpx.

    Subclasses set ``id``, ``key_var`` (the API key variable, ``None`` when the endpoint needs
    none), ``base_url_var`` / ``default_base_url`` and implement :meth:`catalog`. Everything
    is configurable per instance (``api_key``, ``base_url``, ``transport`` for tests).
    """

    id: str = "openai-compatible"
    #: ask for usage in the last streamed chunk (``stream_options.include_usage``)
    stream_usage: bool = True

    # wire

    def headers(self) -> dict[str, str]:
        """Request headers (the bearer key when there is one)."""
        key = self.api_key
        return {"Authorization": f"Bearer {key}"} if key else {}

    def client(self) -> Any:
        """A new httpx client for one call."""
        import httpx

        self.require_configuration()
        return httpx.AsyncClient(
            base_url=self.base_url or "",
            headers=self.headers(),
            timeout=self.timeout_s,
            transport=self._transport,
        )

    def spec_for(self, model: str) -> ModelSpec | None:
        """The catalog entry of ``model`` (nyla id or vendor name)."""
        name = vendor_model(self.id, model)
        return next((s for s in self.catalog() if s.name == name), None)

    def chat_payload(self, request: ChatRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body of a chat-completions request (override to tune per model)."""
        payload: dict[str, Any] = {
            "model": vendor_model(self.id, request.model),
            "messages": to_messages(request.messages),
        }
        if request.tools:
            payload["tools"] = to_tools(request.tools)
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        if request.max_output_tokens is not None:
            payload["max_tokens"] = request.max_output_tokens
        payload.update(self.answer_options(request))
        if stream:
            payload["stream"] = True
            if self.stream_usage:
                payload["stream_options"] = {"include_usage": True}
        return payload

    def answer_options(self, request: ChatRequest) -> dict[str, Any]:
        """The body fields for ``tool_choice``, ``stop`` and ``response_format`` (override
        where the vendor's form differs from OpenAI's)."""
        return answer_options(request)

    def parse_chat(self, data: dict[str, Any], request: ChatRequest) -> ChatResponse:
        """A chat answer as a :class:`ChatResponse` (override to keep vendor extras)."""
        return parse_completion(data, model=request.model)

    async def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        import httpx

        async with self.client() as client:
            try:
                response = await client.post(path, json=payload)
            except httpx.TransportError as exc:
                raise error_for_transport(self.id, exc, endpoint=self.base_url) from exc
            await raise_for_response(response, self.id, env_var=self.key_var)
            try:
                data: dict[str, Any] = response.json()
            except ValueError as exc:
                # proxies and overloaded gateways answer with HTML pages: worth a retry
                raise ProviderServerError(
                    f"{self.id}: answer is not JSON: {response.text[:200]!r}", provider=self.id
                ) from exc
            return data

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """One chat-completions call."""
        data = await self._post("/chat/completions", self.chat_payload(request, stream=False))
        return self.parse_chat(data, request)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]:
        """A streamed chat-completions call (server-sent events)."""
        import httpx

        assembler = StreamAssembler()
        extras: dict[str, Any] = {}
        async with self.client() as client:
            try:
                async with client.stream(
                    "POST", "/chat/completions", json=self.chat_payload(request, stream=True)
                ) as response:
                    await raise_for_response(response, self.id, env_var=self.key_var)
                    async for _event, data in sse_events(response):
                        if data.strip() == "[DONE]":
                            break
                        try:
                            chunk = json.loads(data)
                        except ValueError as exc:
                            raise ProviderServerError(
                                f"{self.id}: malformed stream chunk {data[:120]!r}",
                                provider=self.id,
                            ) from exc
                        extras.update(self.stream_extras(chunk))
                        for delta in assembler.feed(chunk):
                            yield delta
            except httpx.TransportError as exc:
                raise error_for_transport(self.id, exc, endpoint=self.base_url) from exc
        for delta in assembler.finish():
            if delta.kind == "done":
                delta.metadata.update(extras)
            yield delta

    def stream_extras(self, chunk: dict[str, Any]) -> dict[str, Any]:
        """Vendor extras to keep from a streamed chunk (override; e.g. citations)."""
        return {}

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        """One embeddings call for a batch of texts."""
        spec = self.spec_for(model)
        if spec is None or not spec.capabilities.embedding_dimensions:
            raise ModelNotAvailableError(f"{model!r} is not an embedding model of {self.id}")
        data = await self._post(
            "/embeddings", {"model": vendor_model(self.id, model), "input": texts}
        )
        items = sorted(data.get("data") or [], key=lambda d: d.get("index", 0))
        vectors = [list(map(float, d["embedding"])) for d in items]
        return EmbeddingResponse(
            vectors=vectors,
            model=spec.id,
            dimensions=len(vectors[0]) if vectors else spec.capabilities.embedding_dimensions,
            usage=parse_usage(data.get("usage")),
        )
