"""The vendor-shaped fakes the provider contract runs against: :class:`ProviderWire` (the
interface a provider's tests implement), :class:`Recorder` (scripted answers, recorded
requests), :class:`OpenAIWire` (the chat-completions format), server-sent events and the
transport for vendor SDKs' own HTTP clients. Imported from
:mod:`nyla.testing.provider_contract` as well."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Handler = Callable[[Any], Any]  # httpx.Request -> httpx.Response


class ProviderWire:
    """A vendor-shaped fake of one provider's HTTP API. Override every method the provider's
    capabilities need; each returns an ``httpx.Response`` with the vendor's documented body."""

    def provider(self, handler: Handler) -> Any:
        """The provider under test, configured with a (fake) key and its HTTP client over
        ``httpx.MockTransport(handler)``."""
        raise NotImplementedError

    def chat_reply(self, text: str, input_tokens: int, output_tokens: int) -> Any:
        """A non-streamed answer with ``text`` and that usage."""
        raise NotImplementedError

    def tool_call_reply(self, call_id: str, name: str, arguments: str) -> Any:
        """A non-streamed answer asking for one tool call (``arguments`` verbatim)."""
        raise NotImplementedError

    def tool_result_in(self, request: Any, call_id: str) -> str | None:
        """The tool result for ``call_id`` as the provider sent it in ``request``."""
        raise NotImplementedError

    def stream_reply(self, chunks: list[str], input_tokens: int, output_tokens: int) -> Any:
        """A streamed answer delivering ``chunks`` of text, then the usage."""
        raise NotImplementedError

    def stream_tool_call_reply(self, call_id: str, name: str, argument_chunks: list[str]) -> Any:
        """A streamed answer with one tool call whose JSON arguments arrive in pieces."""
        raise NotImplementedError

    def error_reply(self, status: int, retry_after: float | None = None) -> Any:
        """An error answer with the vendor's error body (and ``Retry-After`` when given)."""
        raise NotImplementedError

    def embedding_reply(self, request: Any, dimensions: int) -> Any:
        """An embeddings answer for the texts in ``request``: each vector must be a
        deterministic function of its text (use :func:`fake_vector`)."""
        raise NotImplementedError

    def search_reply(self, hits: list[dict[str, Any]]) -> Any:
        """A web search answer with ``hits`` (``url``, ``title``, ``content``, ``score``)."""
        raise NotImplementedError

    # the answer options: what the vendor's API reference shows for each (body fields)

    def tool_choice_fields(self, choice: Any) -> dict[str, Any]:
        """The request body fields (and values) the vendor documents for the
        :class:`~nyla.models.chat_options.ToolChoice` ``choice`` (``none``, ``required``
        or a named tool)."""
        raise NotImplementedError(
            f"{type(self).__name__}.tool_choice_fields: the models declare tool_choice; return "
            "the request body fields the vendor's API reference documents for it"
        )

    def stop_fields(self, stop: list[str]) -> dict[str, Any]:
        """The request body fields the vendor documents for stop sequences ``stop``."""
        raise NotImplementedError(
            f"{type(self).__name__}.stop_fields: the models declare stop_sequences; return the "
            "request body fields the vendor's API reference documents for it"
        )

    def response_format_fields(self, response_format: Any) -> dict[str, Any]:
        """The request body fields the vendor documents for the
        :class:`~nyla.models.chat_options.ResponseFormat` ``response_format``."""
        raise NotImplementedError(
            f"{type(self).__name__}.response_format_fields: the models declare json_mode or "
            "structured_output; return the request body fields the vendor's API reference "
            "documents for it"
        )

    def json_reply(self, response_format: Any, value: Any) -> Any:
        """A non-streamed answer whose content is the JSON ``value`` (as the vendor delivers
        it for ``response_format``; by default the JSON text as the message)."""
        return self.chat_reply(json.dumps(value), 40, 12)

    def stream_json_reply(self, response_format: Any, value: Any) -> Any:
        """A streamed answer delivering the JSON ``value`` in pieces."""
        text = json.dumps(value)
        cut = len(text) // 2
        return self.stream_reply([text[:cut], text[cut:]], 40, 12)


def fake_vector(text: str, dimensions: int) -> list[float]:
    """A deterministic stand-in vector for ``text`` (for wire fakes of embedding APIs)."""
    import hashlib

    seed = hashlib.sha256(text.encode("utf-8")).digest()
    return [((seed[i % len(seed)] + i) % 97) / 97.0 for i in range(dimensions)]


class Recorder:
    """Wraps a sequence of answers as a MockTransport handler and records the requests."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        index = min(len(self.requests), len(self.answers)) - 1
        answer = self.answers[index]
        return answer(request) if callable(answer) else answer


class _Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def _sse(events: list[Any], *, done: bool = True, named: bool = False) -> Any:
    import httpx

    lines = []
    for event in events:
        if named:
            name, data = event
            lines.append(f"event: {name}\ndata: {json.dumps(data)}\n\n")
        else:
            lines.append(f"data: {json.dumps(event)}\n\n")
    if done:
        lines.append("data: [DONE]\n\n")
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content="".join(lines).encode()
    )


def sse_response(events: list[Any], *, done: bool = True, named: bool = False) -> Any:
    """An ``httpx.Response`` streaming ``events`` as server-sent events (``named``: a list of
    ``(event, data)`` pairs, as Anthropic sends them; ``done``: end with ``data: [DONE]``)."""
    return _sse(events, done=done, named=named)


class OpenAIWire(ProviderWire):
    """The OpenAI chat-completions / embeddings wire format as the OpenAI API reference shows
    it; vendors speaking the same format (Perplexity, Mistral, Ollama, vLLM) subclass it and
    override :meth:`provider` (and :meth:`completion` for their extras)."""

    model_name = "model"

    def completion(self, message: dict[str, Any], finish: str, usage: tuple[int, int]) -> dict:
        """The body of a non-streamed chat completion."""
        return {
            "id": "chatcmpl-123",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": self.model_name,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": usage[0] + usage[1],
            },
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict:
        """One streamed ``chat.completion.chunk``."""
        return {
            "id": "chatcmpl-123",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": self.model_name,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    def usage_chunk(self, usage: tuple[int, int]) -> dict:
        """The last chunk with ``stream_options.include_usage``: no choices, only usage."""
        return {
            "id": "chatcmpl-123",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": self.model_name,
            "choices": [],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": usage[0] + usage[1],
            },
        }

    def chat_reply(self, text: str, input_tokens: int, output_tokens: int) -> Any:
        import httpx

        message = {"role": "assistant", "content": text, "refusal": None}
        return httpx.Response(
            200, json=self.completion(message, "stop", (input_tokens, output_tokens))
        )

    def tool_call_reply(self, call_id: str, name: str, arguments: str) -> Any:
        import httpx

        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        }
        return httpx.Response(200, json=self.completion(message, "tool_calls", (50, 12)))

    def tool_result_in(self, request: Any, call_id: str) -> str | None:
        body = json.loads(request.content)
        for m in body.get("messages", []):
            if m.get("role") == "tool" and m.get("tool_call_id") == call_id:
                content = m.get("content")
                if isinstance(content, list):
                    return "".join(p.get("text", "") for p in content)
                return content
        return None

    def stream_reply(self, chunks: list[str], input_tokens: int, output_tokens: int) -> Any:
        events = [self.chunk({"role": "assistant", "content": ""})]
        events += [self.chunk({"content": c}) for c in chunks]
        events.append(self.chunk({}, "stop"))
        events.append(self.usage_chunk((input_tokens, output_tokens)))
        return _sse(events)

    def stream_tool_call_reply(self, call_id: str, name: str, argument_chunks: list[str]) -> Any:
        first = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
            ],
        }
        events = [self.chunk(first)]
        events += [
            self.chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in argument_chunks
        ]
        events.append(self.chunk({}, "tool_calls"))
        events.append(self.usage_chunk((30, 8)))
        return _sse(events)

    def tool_choice_fields(self, choice: Any) -> dict[str, Any]:
        """``tool_choice``: ``"none"``, ``"required"`` or ``{"type": "function", "function":
        {"name": ...}}``."""
        if choice.mode == "tool":
            return {"tool_choice": {"type": "function", "function": {"name": choice.name}}}
        return {"tool_choice": choice.mode}

    def stop_fields(self, stop: list[str]) -> dict[str, Any]:
        """``stop``: up to four sequences."""
        return {"stop": stop}

    def response_format_fields(self, response_format: Any) -> dict[str, Any]:
        """``response_format``: ``{"type": "json_object"}`` or ``{"type": "json_schema",
        "json_schema": {"name", "schema", "strict"}}``."""
        if response_format.type == "json_schema":
            schema = {
                "name": response_format.name,
                "schema": response_format.json_schema,
                "strict": response_format.strict,
            }
            return {"response_format": {"type": "json_schema", "json_schema": schema}}
        return {"response_format": {"type": response_format.type}}

    def error_body(self, status: int) -> dict:
        """The vendor's error body for ``status``."""
        kinds = {
            401: (
                "Incorrect API key provided: sk-test.",
                "invalid_request_error",
                "invalid_api_key",
            ),
            429: ("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
        }
        message, kind, code = kinds.get(status, ("The server had an error.", "server_error", None))
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    def error_reply(self, status: int, retry_after: float | None = None) -> Any:
        import httpx

        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        return httpx.Response(status, json=self.error_body(status), headers=headers)

    def embedding_reply(self, request: Any, dimensions: int) -> Any:
        import base64
        import struct

        import httpx

        body = json.loads(request.content)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]

        def encode(vector: list[float]) -> Any:
            # with encoding_format=base64 the API sends little-endian float32 bytes
            if body.get("encoding_format") == "base64":
                return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            return vector

        return httpx.Response(
            200,
            json={
                "object": "list",
                "data": [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": encode(fake_vector(t, dimensions)),
                    }
                    for i, t in enumerate(texts)
                ],
                "model": body.get("model", self.model_name),
                "usage": {"prompt_tokens": 5 * len(texts), "total_tokens": 5 * len(texts)},
            },
        )


def sdk_transport(handler: Handler) -> Any:
    """A mock transport for a vendor SDK's own HTTP client (``httpx2`` in current SDKs) that
    hands each request to the httpx ``handler`` the wire fakes are written against."""
    import httpx

    from nyla.sdk.http import _sdk_httpx

    flavour = _sdk_httpx()
    if flavour is httpx:  # pragma: no cover - older SDK generations
        return httpx.MockTransport(handler)

    def handle(request: Any) -> Any:
        mirrored = httpx.Request(
            request.method,
            str(request.url),
            headers=list(request.headers.multi_items()),
            content=request.read(),
        )
        try:
            response = handler(mirrored)
        except httpx.TimeoutException as exc:
            raise flavour.ReadTimeout(str(exc), request=request) from exc
        except httpx.TransportError as exc:
            raise flavour.ConnectError(str(exc), request=request) from exc
        return flavour.Response(
            response.status_code,
            headers=list(response.headers.multi_items()),
            content=response.read(),
        )

    return flavour.MockTransport(handle)
