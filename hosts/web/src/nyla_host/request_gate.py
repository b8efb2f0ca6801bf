"""The host's one middleware: every request passes it before a route runs.

In one pure ASGI layer (no buffering: SSE streams pass through untouched) it

- refuses hostile input (:mod:`nyla_host.input_guard`: the path, query string and body that
  cannot be stored or encoded) with a 400 that says what was wrong;
- refuses a body larger than the host accepts with a 413 before it is read (a declared
  ``Content-Length`` at once; a multipart upload without one as its bytes pass);
- makes the ``X-User-Timezone`` header the request's timezone (:mod:`nyla_host.timezone`);
- adds the security headers to every response (:mod:`nyla_host.security_headers`), the
  refusals above included, unless the host app sets its own.

These were four middlewares (FastAPI's body limit one of them, itself five wrappers): each
layer costs a request a coroutine, and the four together ~20 µs of the ~100 µs nyla spends on
``GET /api/me`` in-process, more than all of nyla's own work on it (``bench/host.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nyla_host.input_guard import MAX_JSON_BYTES, InputError, guarded, refuse
from nyla_host.security_headers import with_security_headers
from nyla_host.timezone import enter_request_timezone, leave_request_timezone


class RequestGate:
    """See the module. ``max_body_bytes`` gives the largest body accepted (read per request,
    so a changed setting applies at once); ``security_headers=False`` leaves the response
    headers to the host app."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: Callable[[], int],
        security_headers: bool = True,
        max_json_bytes: int = MAX_JSON_BYTES,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.security_headers = security_headers
        self.max_json_bytes = max_json_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.security_headers:
            send = _with_headers(send)
        zone = length = None
        multipart = False
        for name, value in scope["headers"]:
            if name == b"x-user-timezone":
                zone = value
            elif name == b"content-length":
                length = value
            elif name == b"content-type":
                multipart = value.split(b";", 1)[0].strip().lower() == b"multipart/form-data"
        try:
            if length is not None or multipart:
                receive = self._limited(receive, length)
            receive = await guarded(
                scope, receive, multipart=multipart, max_json_bytes=self.max_json_bytes
            )
        except InputError as exc:
            await refuse(send, exc.status, str(exc), openai=scope["path"].startswith("/v1/"))
            return
        token = enter_request_timezone(zone)
        try:
            await self.app(scope, receive, send)
        finally:
            leave_request_timezone(token)

    def _limited(self, receive: Receive, length: bytes | None) -> Receive:
        """``receive`` that raises a 413 once more than the host's limit arrived; a declared
        length above it is refused at once (:class:`InputError`)."""
        limit = self.max_body_bytes()
        if length is not None and length.isdigit() and int(length) > limit:
            raise InputError(f"the request body is larger than {limit} bytes", status=413)
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
                # an HTTPException, so that FastAPI's body parsing passes it on as it is
                raise HTTPException(413, f"the request body is larger than {limit} bytes")
            return message

        return limited


def _with_headers(send: Send) -> Send:
    async def send_with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = with_security_headers(message)
        await send(message)

    return send_with_headers
