"""CORS for the authorization server's public endpoints, so an MCP client running in a
browser (on any origin) can discover the server, register and get, refresh and revoke its
tokens: the two metadata documents, ``/oauth/register``, ``/oauth/token`` and
``/oauth/revoke``.

Any origin, never credentials: these endpoints take no cookie and no nyla credential (each
checks the client's own), so a page elsewhere learns nothing it could not ask for itself.
The consent page and the API its script calls get no CORS: a decision must come from nyla's
own page, as the signed-in person."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response
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


class CorsRoute(APIRoute):
    """A route any origin may call without credentials: its answer (an OAuth error too)
    carries ``Access-Control-Allow-Origin: *``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def with_cors(request: Request) -> Response:
            response = await handler(request)
            response.headers.update(ALLOW_ANY_ORIGIN)
            return response

        return with_cors


async def preflight() -> Response:
    """The answer to a browser's preflight ``OPTIONS`` request."""
    return Response(status_code=204, headers=PREFLIGHT)


def add_preflights(router: APIRouter) -> None:
    """An ``OPTIONS`` route answering the preflight for each path of ``router``."""
    paths = sorted({route.path for route in router.routes if isinstance(route, APIRoute)})
    for path in paths:
        router.add_api_route(path, preflight, methods=["OPTIONS"], include_in_schema=False)
