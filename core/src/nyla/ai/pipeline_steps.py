"""The steps of the AI service's pipeline that its operation helpers (speech, reranking)
call: one protocol, so each helper depends on the steps and not on the service that
imports it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession
from nyla.ai.route import Route
from nyla.models.ai import ModelSpec, OperationType, Usage

T = TypeVar("T")


class PipelineSteps(Protocol):
    """Gate, route, answer, settle and the governance checks of
    :class:`nyla.ai.pipeline.AiPipeline`, as its operation helpers use them."""

    def _gate(self, context: Any) -> NeutralizationGate: ...

    def _route(
        self,
        operation: OperationType,
        context: Any,
        *,
        input_tokens: int,
        session: NeutralizationSession,
        gate: NeutralizationGate,
        model: str | None = None,
        max_output: int | None = None,
        budget: float | None = None,
        needs_tools: bool = False,
        needs: tuple[str, ...] = (),
        fallback: bool = True,
        sized: bool = True,
        what: str = "model",
    ) -> Route: ...

    def _text_route(
        self, operation: OperationType, text: str, context: Any, **kw: Any
    ) -> tuple[Route, str]: ...

    async def _answer(
        self,
        route: Route,
        attempt: Callable[[ModelSpec, Any], Awaitable[T]],
        *,
        expect: type,
        capability: tuple[str, str] | None = None,
    ) -> tuple[ModelSpec, float | None, T]: ...

    def _settle(
        self, context: Any, spec: ModelSpec, usage: Usage, route: Route | None = None
    ) -> tuple[float, bool]: ...

    async def _govern(self, context: Any) -> None: ...

    async def _admit(self, context: Any, route: Route) -> None: ...
