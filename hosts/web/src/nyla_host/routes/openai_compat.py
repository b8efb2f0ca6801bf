"""An OpenAI-compatible face on the host's agent runs: ``POST /v1/chat/completions`` (plain
and ``stream: true``) and ``GET /v1/models``, so chat clients and SDKs made for OpenAI talk to
a nyla agent with the user's data. The API key is a nyla API token; a "model" is an agent
configuration: ``nyla`` (the host's default) or ``nyla/<model id>`` for each model the caller
may use. A completion is a host run (``RunManager.start``, as ``POST /api/runs``), so its
identity, allow-list, budget, neutralisation and record are the same. Errors answer in
OpenAI's shape ``{"error": {"message", "type", "param", "code"}}``."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from nyla import AgentConfig, NylaError
from nyla_host.auth import need_user
from nyla_host.errors import BUSY_RETRY_AFTER_S, status_of
from nyla_host.identity import Identity
from nyla_host.model_choice import model_choice
from nyla_host.routes.catalog import run_context
from nyla_host.service_access import AGENT, need_service
from nyla_host.state import host
from nyla_host.timezone import request_timezone

#: the agent configuration a client names without a model of its own
DEFAULT_AGENT = "nyla"
_PREFIX = f"{DEFAULT_AGENT}/"
#: OpenAI's error ``type`` by HTTP status
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    429: "rate_limit_error",
}
_ERROR_CODES = {401: "invalid_api_key", 403: "model_not_allowed", 404: "model_not_found"}
#: ``created`` of the agent configurations: they exist since the host loaded
_LOADED_AT = int(time.time())
#: finish_reason by run status: a run stopped by its rounds or budget was cut short
_FINISH = {"maxRoundsReached": "length", "budgetExceeded": "length"}


def openai_error(
    status: int, message: str, *, code: str | None = None, retry_after: int | None = None
) -> JSONResponse:
    """An error in OpenAI's shape."""
    error_type = _ERROR_TYPES.get(
        status, "server_error" if status >= 500 else "invalid_request_error"
    )
    body = {
        "error": {
            "message": message,
            "type": error_type,
            "param": None,
            "code": code or _ERROR_CODES.get(status),
        }
    }
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return JSONResponse(body, status_code=status, headers=headers)


class OpenAIRoute(APIRoute):
    """A route whose failures (authentication and validation included, which happen before
    the endpoint runs) answer in OpenAI's error shape instead of ``{"detail": ...}``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except HTTPException as exc:
                return openai_error(exc.status_code, str(exc.detail))
            except RequestValidationError as exc:
                first = exc.errors()[0] if exc.errors() else {}
                where = ".".join(str(p) for p in first.get("loc", ())[1:])
                return openai_error(400, f"{where or 'body'}: {first.get('msg', 'invalid')}")
            except NylaError as exc:
                return openai_error(status_of(exc), str(exc))
            except PoolTimeoutError:
                message = "the server is busy: no database connection came free in time; retry"
                return openai_error(503, message, retry_after=BUSY_RETRY_AFTER_S)

        return answer


router = APIRouter(prefix="/v1", tags=["openai"], route_class=OpenAIRoute)


class ContentPart(BaseModel):
    """One part of a message's content; only text parts are read."""

    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    """A message of the conversation the client sends."""

    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        if any(p.type != "text" for p in self.content):
            raise HTTPException(400, "only text content parts are supported")
        return "\n".join(p.text or "" for p in self.content)


class ChatCompletionRequest(BaseModel):
    """``POST /v1/chat/completions``: OpenAI's request; fields nyla has no use for
    (temperature, tools, n, ...) are accepted and ignored, as a drop-in endpoint must."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=255)
    messages: list[ChatMessage] = Field(min_length=1, max_length=500)
    stream: bool = False


def agent_prompt(messages: list[ChatMessage]) -> str:
    """The prompt of the run: the last user message, preceded by the client's instructions
    and the earlier turns it sent (a completion carries its whole conversation)."""
    texts = [(m.role, m.text()) for m in messages]
    if texts[-1][0] != "user" or not texts[-1][1].strip():
        raise HTTPException(400, "messages: the last message must be a user message with text")
    prompt = texts[-1][1]
    if len(prompt) > 100_000:
        raise HTTPException(400, "messages: the last user message exceeds 100000 characters")
    earlier = [f"{role}: {text}" for role, text in texts[:-1] if text.strip()]
    if not earlier:
        return prompt
    return "Earlier in this conversation:\n" + "\n".join(earlier) + f"\n\nNow: {prompt}"


def _model_object(model_id: str, created: int) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": created, "owned_by": "nyla"}


@router.get("/models")
async def list_models(request: Request, identity: Identity = Depends(need_user)) -> dict[str, Any]:
    """The agent configurations the caller may run, as OpenAI models."""
    choice = await model_choice(host(request), identity)
    ids = [DEFAULT_AGENT, *(_PREFIX + s.id for s in choice.specs)]
    return {"object": "list", "data": [_model_object(i, _LOADED_AT) for i in ids]}


async def _config(request: Request, identity: Identity, name: str) -> AgentConfig:
    """The agent configuration ``name`` stands for (404 for one the caller has not)."""
    choice = await model_choice(host(request), identity)
    if name == DEFAULT_AGENT:
        return AgentConfig(model=choice.for_run(None))
    wanted = name.removeprefix(_PREFIX) if name.startswith(_PREFIX) else None
    if wanted is None or not any(s.id == wanted for s in choice.specs):
        raise HTTPException(
            404,
            f"The model '{name}' does not exist or you may not use it: GET /v1/models lists yours",
        )
    return AgentConfig(model=choice.for_run(wanted))


@router.post("/chat/completions", response_model=None)
async def chat_completions(
    body: ChatCompletionRequest,
    request: Request,
    identity: Identity = Depends(need_service(AGENT)),
) -> Response:
    """Run the agent on the conversation; its answer as a ``chat.completion`` or, with
    ``stream``, as ``chat.completion.chunk`` Server-Sent Events ending with ``[DONE]`` (403
    without ``service.agent``)."""
    state = host(request)
    config = await _config(request, identity, body.model)
    prompt = agent_prompt(body.messages)
    conversation = await state.kernel.files.workflows.create_conversation(
        run_context(identity), prompt=prompt
    )
    row = await state.runs.start(
        prompt,
        identity,
        config=config,
        timezone=request_timezone(),
        conversation_id=str(conversation.id),
    )
    completion = _Completion(f"chatcmpl-{row.run_id}", body.model, int(time.time()))
    events = state.runs.events(row.run_id, 0, keepalive=state.settings.ping_interval_s)
    if body.stream:
        return StreamingResponse(
            completion.stream(events),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    answer = await completion.collect(events)
    if completion.error is not None and not completion.answered:
        return openai_error(500, completion.error)
    return JSONResponse(answer)


class _Completion:
    """Turns a run's events into OpenAI's completion objects."""

    def __init__(self, completion_id: str, model: str, created: int) -> None:
        self.head = {"id": completion_id, "model": model, "created": created}
        self.final = ""
        self.answered = False
        self.finish_reason = "stop"
        self.usage: dict[str, int] | None = None
        self.error: str | None = None

    def _take(self, event: dict[str, Any]) -> str:
        """Record what ``event`` says of the answer; returns its streamed text."""
        kind, data = event.get("type"), event.get("data") or {}
        if kind == "CHUNK":
            return str(event.get("text") or "")
        if kind == "FINAL":
            self.final, self.answered = str(event.get("text") or ""), True
            self.finish_reason = _FINISH.get(str(data.get("status")), "stop")
        elif kind == "AGENT_SUMMARY":
            prompt_tokens, output_tokens = (
                int(data.get("inputTokens") or 0),
                int(data.get("outputTokens") or 0),
            )
            self.usage = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": prompt_tokens + output_tokens,
            }
        elif kind == "ERROR":
            self.error = str(event.get("text") or "the run failed")
        return ""

    async def collect(self, events: AsyncIterator[dict[str, Any] | None]) -> dict[str, Any]:
        """The ``chat.completion`` of the whole run."""
        async for event in events:
            if event is not None:
                self._take(event)
        message = {"role": "assistant", "content": self.final, "refusal": None}
        choice = {"index": 0, "message": message, "finish_reason": self.finish_reason}
        return {
            **self.head,
            "object": "chat.completion",
            "choices": [{**choice, "logprobs": None}],
            "usage": self.usage,
        }

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        chunk = {**self.head, "object": "chat.completion.chunk", "choices": [choice]}
        return f"data: {json.dumps(chunk)}\n\n"

    async def stream(self, events: AsyncIterator[dict[str, Any] | None]) -> AsyncIterator[str]:
        """The run as ``chat.completion.chunk`` events: the role first, each streamed piece
        of text, the finish reason, then ``[DONE]``; a failed run sends an error object."""
        yield self._chunk({"role": "assistant", "content": ""})
        streamed = ""
        async for event in events:
            if event is None:
                yield ": ping\n\n"
                continue
            text = self._take(event)
            if text:
                streamed += text
                yield self._chunk({"content": text})
        if self.answered and not streamed and self.final:
            yield self._chunk({"content": self.final})  # a model that did not stream
        if self.error is not None and not self.answered:
            error = {"message": self.error, "type": "server_error", "param": None, "code": None}
            yield f"data: {json.dumps({'error': error})}\n\n"
        else:
            yield self._chunk({}, self.finish_reason)
        yield "data: [DONE]\n\n"
