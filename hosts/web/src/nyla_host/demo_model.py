"""A scripted model for demos, browser tests and the load benchmark: no key, no network.

``demo:echo`` answers in words streamed one by one (``delay_s`` apart, so a page can be
reloaded mid-run); a prompt that mentions "files" first calls the ``listFiles`` tool, so tool
calls show in the chat. Registered by ``nyla serve --demo-model``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

from nyla import (
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ModelCapabilities,
    ModelSpec,
    OperationType,
    Role,
    StreamDelta,
    ToolCall,
    Usage,
    hookimpl,
)

MODEL_ID = "demo:echo"


def _prompt(request: ChatRequest) -> str:
    users = [m for m in request.messages if m.role is Role.USER]
    return users[-1].text if users else ""


class DemoProvider:
    """Streams a fixed-shape answer that quotes the prompt."""

    id = "demo"

    def __init__(self, delay_s: float | None = None) -> None:
        env = os.environ.get("NYLA_DEMO_MODEL_DELAY")
        self.delay_s = delay_s if delay_s is not None else float(env or 0.05)
        self.spec = ModelSpec(
            id=MODEL_ID,
            provider="demo",
            name="echo",
            operation_types=[OperationType.AGENT, OperationType.DATA_ANALYSE],
            context_window=128_000,
            price_input_chf_per_mtok=0.5,
            price_output_chf_per_mtok=1.5,
            capabilities=ModelCapabilities(tools=True, streaming=True),
            quality_rank=1,
            speed_rank=100,
        )

    def models(self) -> list[ModelSpec]:
        return [self.spec]

    def _reply(self, request: ChatRequest) -> ChatResponse:
        prompt = _prompt(request)
        tool_results = [m for m in request.messages if m.role is Role.TOOL]
        if "files" in prompt.lower() and not tool_results:
            call = ToolCall(id="demo_1", name="listFiles", arguments="{}")
            return ChatResponse(tool_calls=[call], finish_reason="tool_calls")
        seen = f" The tool said: {tool_results[-1].text[:80]}" if tool_results else ""
        text = f"You asked: {prompt.strip()[:200]}.{seen} This answer was streamed word by word."
        return ChatResponse(content=text, finish_reason="stop")

    def _usage(self, request: ChatRequest, response: ChatResponse) -> Usage:
        chars = sum(len(m.text) for m in request.messages)
        return Usage(
            input_tokens=max(1, chars // 4), output_tokens=max(1, len(response.content) // 4)
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        response = self._reply(request)
        response.usage = self._usage(request, response)
        response.model = MODEL_ID
        return response

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]:
        response = await self.chat(request)
        for i, word in enumerate(response.content.split(" ") if response.content else []):
            await asyncio.sleep(self.delay_s)
            yield StreamDelta(kind="text", text=word if i == 0 else " " + word)
        for call in response.tool_calls:
            yield StreamDelta(kind="tool_call", tool_call=call)
        yield StreamDelta(kind="usage", usage=response.usage)
        yield StreamDelta(kind="done", finish_reason=response.finish_reason)

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        raise NotImplementedError("the demo model does not embed")

    async def web_search(self, model: str, query: str, max_results: int = 5) -> list[Any]:
        raise NotImplementedError("the demo model does not search the web")


class DemoPlugin:
    """The plugin object ``nyla serve --demo-model`` registers."""

    def __init__(self, delay_s: float | None = None) -> None:
        self.provider = DemoProvider(delay_s)

    @hookimpl
    def nyla_providers(self) -> list[DemoProvider]:
        return [self.provider]
