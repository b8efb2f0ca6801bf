"""A deterministic scripted model for tests: a function decides each reply.

``ScriptedProvider(script)`` is a real :class:`~nyla.models.ai.Provider` (register it through
a plugin host like any other). ``script(request, index)`` receives the neutralized
:class:`ChatRequest` and the 0-based call index and returns a :class:`ChatResponse`, a plain
string (a final answer), or a list of :class:`ToolCall` (a tool-calling turn).

It honours the answer options as a vendor would: the text ends before the first ``stop``
sequence (finish reason ``stop``), and a reply that breaks ``tool_choice`` (a tool call
under ``none``, no call or another tool under ``required`` / a named tool) or
``response_format`` (text that is not JSON) is an error naming the script's mistake, so a
test cannot pass on a reply no real model would give.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from nyla.models.ai import (
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ModelCapabilities,
    ModelSpec,
    OperationType,
    StreamDelta,
    ToolCall,
    Usage,
    WebSearchHit,
)

ScriptFn = Callable[[ChatRequest, int], Any]

#: what a scripted model declares unless the test says otherwise
SCRIPTED_CAPABILITIES = ModelCapabilities(
    tools=True,
    streaming=True,
    tool_choice=True,
    stop_sequences=True,
    json_mode=True,
    structured_output=True,
)


def honour_options(request: ChatRequest, response: ChatResponse) -> ChatResponse:
    """``response`` cut at the request's first stop sequence; a ``ValueError`` when it breaks
    the request's ``tool_choice`` or ``response_format``."""
    for stop in request.stop:
        at = response.content.find(stop)
        if at >= 0:
            response = response.model_copy(
                update={"content": response.content[:at], "finish_reason": "stop"}
            )
    choice, names = request.tool_choice, [c.name for c in response.tool_calls]
    if choice is not None and request.tools:
        if choice.mode == "none" and names:
            raise ValueError(f"the script called {names} although tool_choice is 'none'")
        if choice.forces_call and not names:
            raise ValueError(
                f"the script made no tool call although tool_choice is {choice.mode!r}"
            )
        if choice.mode == "tool" and names != [choice.name]:
            raise ValueError(f"the script called {names}, tool_choice forces {choice.name!r}")
    if request.response_format is not None and request.response_format.is_json and not names:
        try:
            value = json.loads(response.content)
        except ValueError:
            raise ValueError(
                f"the script answered {response.content[:60]!r}, which is not JSON, "
                f"although response_format is {request.response_format.type!r}"
            ) from None
        if request.response_format.type == "json_object" and not isinstance(value, dict):
            raise ValueError("the script's JSON is not an object (response_format json_object)")
    return response


def scripted_reply(value: Any) -> ChatResponse:
    """Normalize what a script returned into a :class:`ChatResponse`."""
    if isinstance(value, ChatResponse):
        return value
    if isinstance(value, str):
        return ChatResponse(content=value, finish_reason="stop")
    if isinstance(value, ToolCall):
        value = [value]
    if isinstance(value, list):
        calls = []
        for i, item in enumerate(value):
            if isinstance(item, ToolCall):
                calls.append(item)
            else:
                name, args = item
                raw = args if isinstance(args, str) else json.dumps(args)
                calls.append(ToolCall(id=f"call_{i}", name=name, arguments=raw))
        return ChatResponse(tool_calls=calls, finish_reason="tool_calls")
    raise TypeError(f"a script returned {type(value).__name__}")


class ScriptedProvider:
    """A provider whose every answer comes from ``script``; records every request it got.

    It reports no usage unless the script returns a :class:`ChatResponse` with one, so the AI
    service estimates it as for any provider that reports none (``usageEstimated``); a test
    double that re-measured the whole history on every call would bill its own cost to the
    loop it tests."""

    def __init__(
        self,
        script: ScriptFn,
        *,
        id: str = "scripted",
        model: str = "model",
        context_window: int = 128_000,
        price_input: float | None = 1.0,
        price_output: float | None = 2.0,
        operations: list[OperationType] | None = None,
        embed_fn: Callable[[list[str]], list[list[float]]] | None = None,
        quality_rank: int = 10,
        on_premises: bool = False,
        capabilities: ModelCapabilities | None = None,
    ) -> None:
        self.id = id
        self.script = script
        self.requests: list[ChatRequest] = []
        self._embed_fn = embed_fn
        ops = operations or [o for o in OperationType if o is not OperationType.EMBEDDING]
        if embed_fn is not None:
            ops = [*ops, OperationType.EMBEDDING]
        self.spec = ModelSpec(
            id=f"{id}:{model}",
            provider=id,
            name=model,
            operation_types=ops,
            context_window=context_window,
            max_output_tokens=4096,
            price_input_chf_per_mtok=price_input,
            price_output_chf_per_mtok=price_output,
            capabilities=(capabilities or SCRIPTED_CAPABILITIES).model_copy(
                update={"embedding_dimensions": len(embed_fn(["x"])[0]) if embed_fn else None}
            ),
            quality_rank=quality_rank,
            speed_rank=100,
            on_premises=on_premises,
        )

    def models(self) -> list[ModelSpec]:
        return [self.spec]

    async def chat(self, request: ChatRequest) -> ChatResponse:
        index = len(self.requests)
        self.requests.append(request)
        response = honour_options(request, scripted_reply(self.script(request, index)))
        response.model = response.model or self.spec.id
        return response

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]:
        response = await self.chat(request)
        words = response.content.split(" ")
        for i, word in enumerate(words):
            if word or i:
                yield StreamDelta(kind="text", text=word if i == 0 else " " + word)
        for call in response.tool_calls:
            yield StreamDelta(kind="tool_call", tool_call=call)
        yield StreamDelta(kind="usage", usage=response.usage)
        yield StreamDelta(
            kind="done", finish_reason=response.finish_reason, metadata=response.metadata
        )

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        if self._embed_fn is None:
            raise NotImplementedError("this scripted provider has no embed_fn")
        vectors = self._embed_fn(texts)
        return EmbeddingResponse(
            vectors=vectors,
            model=self.spec.id,
            dimensions=len(vectors[0]),
            usage=Usage(input_tokens=sum(len(t) for t in texts) // 4),
        )

    async def web_search(self, model: str, query: str, max_results: int = 5) -> list[WebSearchHit]:
        raise NotImplementedError("the scripted provider does not search the web")


class ScriptedPlugin:
    """Wraps providers as a plugin object for :meth:`PluginHost.from_plugins`."""

    def __init__(self, *providers: Any) -> None:
        self._providers = list(providers)

    def nyla_providers(self) -> list[Any]:
        return list(self._providers)


# mark the hook implementation without importing nyla at module import of users
from nyla.hookspecs import hookimpl  # noqa: E402

ScriptedPlugin.nyla_providers = hookimpl(ScriptedPlugin.nyla_providers)  # type: ignore[method-assign]
