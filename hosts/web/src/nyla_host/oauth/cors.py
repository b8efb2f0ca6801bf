"""CORS for the routes an MCP client running in a browser (on any origin) calls: the
authorization server's public endpoints, so it can discover the server, register and get,
refresh and revoke its tokens (the two metadata documents, ``/oauth/register``,
``/oauth/token`` and ``/oauth/revoke``), and the MCP endpoint ``/mcp`` itself.

Any origin, never credentials: these endpoints take no cookie (each checks a bearer header or
the client's own credential, which a page elsewhere cannot send), so a page elsewhere learns
nothing it could not ask for itself. The consent page and the API its script calls get no
CORS: a decision must come from nyla's own page, as the signed-in person."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, ClassVar

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.routing import APIRoute

#: what every answer of a CORS endpoint carries
ALLOW_ANY_ORIGIN = {"Access-Control-Allow-Origin": "*"}
#: the answer to a preflight request
PREFLIGHT = {
    **ALLOW_ANY_ORIGIN,
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, mcp-protocol-version",
    "Access-Control-Max-Age": "86400",
}
#: what the MCP endpoint's answers carry: a browser client reads the session id (the
#: streamable HTTP transport's), the negotiated version and, on a 401, the challenge naming
#: the protected-resource metadata (where its authorization server is found)
MCP_ANSWER = {
    **ALLOW_ANY_ORIGIN,
    "Access-Control-Expose-Headers": "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate",
}
#: the MCP endpoint's preflight: the methods and headers of streamable HTTP
MCP_PREFLIGHT = {
    **PREFLIGHT,
    "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
    "Access-Control-Allow-Headers": (
        "Authorization, Content-Type, Accept, Last-Event-ID, mcp-protocol-version, mcp-session-id"
    ),
}


class CorsRoute(APIRoute):
    """A route any origin may call without credentials: its answer (an OAuth error, and a
    refusal its dependencies raise, too) carries :attr:`answer_headers`."""

    answer_headers: ClassVar[dict[str, str]] = ALLOW_ANY_ORIGIN

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        headers = self.answer_headers

        async def with_cors(request: Request) -> Response:
            try:
                response = await handler(request)
            except HTTPException as exc:  # a 401 of the caller's dependency: readable too
                exc.headers = {**(exc.headers or {}), **headers}
                raise
            response.headers.update(headers)
            return response

        return with_cors


class McpCorsRoute(CorsRoute):
    """A route of the MCP endpoint: CORS with the streamable HTTP headers exposed."""

    answer_headers: ClassVar[dict[str, str]] = MCP_ANSWER


def _preflight(headers: dict[str, str]) -> Callable[[], Coroutine[Any, Any, Response]]:
    async def preflight() -> Response:
        """The answer to a browser's preflight ``OPTIONS`` request."""
        return Response(status_code=204, headers=headers)

    preflight.nyla_preflight = True  # type: ignore[attr-defined]
    return preflight


def is_preflight(route: Any) -> bool:
    """Whether ``route`` answers CORS preflights (public by nature: a browser sends a
    preflight without credentials, and its answer holds nothing but these headers)."""
    return bool(getattr(getattr(route, "endpoint", None), "nyla_preflight", False))


def add_preflights(router: APIRouter, headers: dict[str, str] = PREFLIGHT) -> None:
    """An ``OPTIONS`` route answering the preflight with ``headers`` for each path of
    ``router``."""
    paths = sorted({route.path for route in router.routes if isinstance(route, APIRoute)})
    answer = _preflight(headers)
    for path in paths:
        router.add_api_route(path, answer, methods=["OPTIONS"], include_in_schema=False)
