"""A scripted model that works in several rounds, and its toolbox, for the scale-out tests:
``rounds:steps`` streams a few words and calls a tool each round until the prompt's
``steps=N`` (default 4) calls are done, then answers. ``write`` in the prompt makes the
calls ``note`` (a writing tool) instead of ``tick``; ``whoami`` makes the first call
``whoami``, whose result is what the run's tools see of it (identity, limits, model
restrictions, neutralisation). Word and tool delays come from ``NYLA_ROUNDS_DELAY``
(seconds, default 0.05). Registered with ``--plugin rounds_model:RoundsPlugin``."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel

from nyla import (
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ModelCapabilities,
    ModelSpec,
    OperationType,
    Role,
    StreamDelta,
    Tool,
    Toolbox,
    ToolCall,
    Usage,
    hookimpl,
)

MODEL_ID = "rounds:steps"


def _delay() -> float:
    return float(os.environ.get("NYLA_ROUNDS_DELAY") or 0.05)


def _prompt(request: ChatRequest) -> str:
    users = [m for m in request.messages if m.role is Role.USER]
    return users[0].text if users else ""


def reply(request: ChatRequest) -> ChatResponse:
    """The next turn of the script for ``request``."""
    prompt = _prompt(request)
    done = sum(1 for m in request.messages if m.role is Role.TOOL)
    found = re.search(r"steps=(\d+)", prompt)
    steps = int(found.group(1)) if found else 4
    if "whoami" in prompt and done == 0:
        call = ToolCall(id="call_whoami", name="whoami", arguments="{}")
        return ChatResponse(content="asking", tool_calls=[call], finish_reason="tool_calls")
    if done < steps + ("whoami" in prompt):
        name = "note" if "write" in prompt else "tick"
        call = ToolCall(id=f"call_{done}", name=name, arguments=json.dumps({"step": done}))
        text = f"working on step {done}"
        return ChatResponse(content=text, tool_calls=[call], finish_reason="tool_calls")
    return ChatResponse(content=f"done after {done} steps", finish_reason="stop")


class RoundsProvider:
    """The provider of ``rounds:steps``."""

    id = "rounds"

    def __init__(self) -> None:
        self.spec = ModelSpec(
            id=MODEL_ID,
            provider="rounds",
            name="steps",
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

    async def chat(self, request: ChatRequest) -> ChatResponse:
        response = reply(request)
        response.usage = Usage(input_tokens=10, output_tokens=5)
        response.model = MODEL_ID
        return response

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]:
        response = await self.chat(request)
        for i, word in enumerate(response.content.split(" ") if response.content else []):
            await asyncio.sleep(_delay())
            yield StreamDelta(kind="text", text=word if i == 0 else " " + word)
        for call in response.tool_calls:
            yield StreamDelta(kind="tool_call", tool_call=call)
        yield StreamDelta(kind="usage", usage=response.usage)
        yield StreamDelta(kind="done", finish_reason=response.finish_reason)

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        raise NotImplementedError("rounds:steps does not embed")

    async def web_search(self, model: str, query: str, max_results: int = 5) -> list[Any]:
        raise NotImplementedError("rounds:steps does not search the web")


class StepArgs(BaseModel):
    step: int = 0


class NoArgs(BaseModel):
    pass


async def _tick(args: StepArgs, ctx: Any) -> str:
    await asyncio.sleep(_delay())
    return f"step {args.step} checked"


async def _note(args: StepArgs, ctx: Any) -> str:
    await asyncio.sleep(_delay() * 4)
    return f"step {args.step} noted"


async def _whoami(args: NoArgs, ctx: Any) -> str:
    run = ctx.run
    return json.dumps(
        {
            "userId": run.user_id,
            "mandateId": run.mandate_id,
            "timezone": run.timezone,
            "workflowId": run.workflow_id,
            "allowedModels": run.allowed_models,
            "allowedProviders": run.allowed_providers,
            "requireNeutralization": run.require_neutralization,
            "connections": run.connections,
            "remainingBudgetChf": ctx.remaining_budget_chf,
            "remainingRounds": ctx.remaining_rounds,
            "model": ctx.model,
            "neutralizing": ctx.neutralization is not None,
        },
        sort_keys=True,
    )


def toolbox() -> Toolbox:
    """``rounds``: tick (reads), note (writes), whoami (reads the run's own context)."""
    return Toolbox(
        id="rounds",
        label="Rounds",
        default_active=True,
        tools=[
            Tool.from_model("tick", "Check one step.", StepArgs, _tick, read_only=True),
            Tool.from_model("note", "Write down one step.", StepArgs, _note),
            Tool.from_model("whoami", "Who runs this.", NoArgs, _whoami, read_only=True),
        ],
    )


class RoundsPlugin:
    """The plugin object: the provider and its toolbox."""

    def __init__(self) -> None:
        self.provider = RoundsProvider()

    @hookimpl
    def nyla_providers(self) -> list[Any]:
        return [self.provider]

    @hookimpl
    def nyla_toolboxes(self) -> list[Toolbox]:
        return [toolbox()]
