"""The AI service's time limits on one model: ``timeout_s`` per attempt, ``retry_budget_s``
for all attempts with their waits, then the next model."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from nyla.ai.retry import RetryPolicy
from nyla.ai.service import AiService
from nyla.errors import ProviderRateLimitError, ProviderTimeoutError
from nyla.models.ai import AiCallRequest, ChatRequest, ChatResponse, Message, Role
from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider


class SlowAtFirst(ScriptedProvider):
    """Hangs on its first ``hangs`` calls, then answers as scripted."""

    def __init__(self, hangs: int, **kw: Any) -> None:
        super().__init__(lambda request, index: "answered", **kw)
        self.hangs = hangs
        self.attempts = 0

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.attempts += 1
        if self.attempts <= self.hangs:
            await asyncio.Event().wait()
        return await super().chat(request)


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def request() -> AiCallRequest:
    return AiCallRequest(operation="agent", messages=[Message(role=Role.USER, content="x")])


def service(make_kernel: Any, *providers: Any, sleeps: Any = None, **ai: Any) -> AiService:
    kernel = make_kernel(ScriptedPlugin(*providers), builtins=False, settings={"ai": ai})
    return AiService(
        kernel.plugins, ai, retry=RetryPolicy(sleep=sleeps or Sleeps(), base_delay_s=0.001)
    )


async def test_an_attempt_past_its_timeout_is_retried(make_kernel) -> None:
    slow = SlowAtFirst(1, id="a")
    ai = service(make_kernel, slow, timeout_s=0.05, retry_budget_s=5)
    response = await asyncio.wait_for(ai.call(request()), 5)
    assert response.content == "answered"
    assert slow.attempts == 2 and response.retries == 1


async def test_the_retry_budget_ends_the_attempts_and_the_next_model_answers(make_kernel) -> None:
    hanging = SlowAtFirst(10**6, id="a")
    hanging.spec.quality_rank = 99
    backup = ScriptedProvider(lambda r, i: "from b", id="b")
    ai = service(make_kernel, hanging, backup, timeout_s=0.5, retry_budget_s=0.6, max_attempts=10)
    began = time.monotonic()
    response = await asyncio.wait_for(ai.call(request()), 5)
    assert response.content == "from b"
    # the second attempt was cut at the budget (0.6 s), not at its own timeout (1.0 s): the
    # margin leaves a busy test machine 0.3 s of lateness
    assert hanging.attempts == 2 and time.monotonic() - began < 0.9
    assert "retry budget of 0.6 s" in response.fallbacks[0].error
    assert response.fallbacks[0].error_type == "ProviderTimeoutError"


async def test_a_retry_that_would_wait_past_the_budget_gives_up_at_once(make_kernel) -> None:
    def limited(request: ChatRequest, index: int) -> str:
        raise ProviderRateLimitError("slow down", retry_after=30.0, provider="a")

    sleeps = Sleeps()
    limited_provider = ScriptedProvider(limited, id="a")
    ai = service(make_kernel, limited_provider, sleeps=sleeps, retry_budget_s=10, max_fallbacks=0)
    with pytest.raises(ProviderTimeoutError, match="retry budget of 10 s"):
        await ai.call(request())
    assert sleeps.delays == [] and len(limited_provider.requests) == 1
