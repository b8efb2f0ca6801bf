"""Hostile input stops at the door, with a 400 that says what was wrong.

PostgreSQL text cannot hold a NUL byte, UTF-8 cannot hold a lone surrogate, and JSON has no
NaN or infinity. A request that carries one of them in its path, its query string or its
body would otherwise reach a route, then the database or the JSON encoder, and end as a 500
with nothing for the caller to act on. :func:`guarded` checks all three before any route
runs (the host's middleware, :mod:`nyla_host.request_gate`, calls it): every body, whatever its ``Content-Type`` says (FastAPI reads a body without one
as JSON), except multipart uploads, whose files are bytes; a path (where the ids are) may hold
no control character either. Responses pass through untouched (SSE streams are never
buffered).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.types import Message, Receive, Scope, Send

from nyla.host import has_unstorable_chars

#: a JSON body nested deeper than this is refused (Python's parser would recurse out)
MAX_JSON_DEPTH = 64
#: JSON bodies larger than this are refused (413)
MAX_JSON_BYTES = 8 * 2**20
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: printable ASCII without ``%``: a path or query string of only these decodes to itself,
#: which holds no NUL, surrogate or control character (nearly every request: no decoding)
_PLAIN = re.compile(rb"[\x21-\x24\x26-\x7e]*")


class InputError(ValueError):
    """What is wrong with a request, in words for its sender, and the status to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


async def guarded(
    scope: Scope, receive: Receive, *, multipart: bool, max_json_bytes: int
) -> Receive:
    """The request's ``receive`` once its path, query string and body (read here, up to
    ``max_json_bytes``, then replayed; multipart uploads are not read) were checked; raises
    :class:`InputError` for what cannot be stored or encoded (the caller answers it with
    :func:`refuse`)."""
    check_url(scope.get("raw_path") or scope["path"].encode(), scope.get("query_string"))
    if multipart or scope["method"] not in _BODY_METHODS:
        return receive
    body = await read_body(receive, max_json_bytes)
    if body.strip():
        check_json(body)
    return replay(body, receive)


def check_url(raw_path: bytes, query: bytes | None) -> None:
    """Raise :class:`InputError` when the path or query decodes to unstorable text, or the
    path holds a control character (no id or route has one)."""
    if _PLAIN.fullmatch(raw_path) and (not query or _PLAIN.fullmatch(query)):
        return
    for where, raw in (("path", raw_path), ("query string", query or b"")):
        decoded = unquote_to_bytes(raw.replace(b"+", b" ") if where != "path" else raw)
        try:
            text = decoded.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"the request's {where} is not valid UTF-8") from None
        if has_unstorable_chars(text):
            raise InputError(f"the request's {where} contains a NUL byte or a lone surrogate")
        if where == "path" and any(unicodedata.category(ch) == "Cc" for ch in text):
            raise InputError("the request's path contains a control character")


def check_json(body: bytes) -> Any:
    """The parsed body; :class:`InputError` for invalid UTF-8, NaN/infinity, unstorable
    text or nesting deeper than :data:`MAX_JSON_DEPTH`. A body that is no JSON at all is left
    to the route (FastAPI answers it with its own 422)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("the request body is not valid UTF-8") from None
    if has_unstorable_chars(text):
        raise InputError("the request body contains a NUL byte or a lone surrogate")
    if _depth(text) > MAX_JSON_DEPTH:
        raise InputError(f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except InputError:
        raise
    except ValueError:
        return None  # malformed: the route's validation says so
    _check_strings(value)
    return value


def _depth(text: str) -> int:
    """The deepest bracket nesting outside strings (a linear scan, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _no_constant(name: str) -> Any:
    raise InputError(f"the JSON body contains {name}, which JSON does not allow")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise InputError(f"the JSON body contains a number out of range ({literal[:40]})")
    return value


def _check_strings(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if has_unstorable_chars(item):
                raise InputError("the JSON body contains a NUL byte or a lone surrogate")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


async def read_body(receive: Receive, limit: int) -> bytes:
    """The whole body; :class:`InputError` (413) once it grows past ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise InputError(f"the request body is larger than {limit} bytes", status=413)
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def replay(body: bytes, original: Receive) -> Receive:
    """The body once, then the client's own messages (its disconnect, when it comes)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await original()

    return receive


async def refuse(send: Send, status: int, detail: str, *, openai: bool = False) -> None:
    """Answer a refused request with ``status`` and ``detail``."""
    # under /v1/ the OpenAI-compatible endpoint's clients read OpenAI's error shape
    shape: dict[str, object] = (
        {"error": {"message": detail, "type": "invalid_request_error", "param": None, "code": None}}
        if openai
        else {"detail": detail, "error": "InvalidInput"}
    )
    body = json.dumps(shape).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
