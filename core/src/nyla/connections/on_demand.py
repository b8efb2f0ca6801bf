"""A connection's httpx client, made at its first request.

A session on a connection gets a client whether or not its connector sends anything: a local
folder is read from disk. Making the client (and importing httpx to make it) when the first
request is built keeps ~12 MiB of httpx, its command line's ``rich`` and ``pygments``, and a
TLS context with the CA bundle out of the processes whose connectors never send one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx


class OnDemandClient:
    """The three calls :class:`~nyla.connections.http.VendorHttp` makes on an
    ``httpx.AsyncClient``, on one that ``make`` builds at the first of them; ``aclose``
    closes it if it was made."""

    def __init__(self, make: Callable[[], httpx.AsyncClient]) -> None:
        self._make = make
        self._client: httpx.AsyncClient | None = None
        self._closed = False

    @property
    def made(self) -> bool:
        """Whether a request made the client."""
        return self._client is not None

    def _get(self) -> httpx.AsyncClient:
        if self._client is None:
            if self._closed:  # as a closed httpx client answers
                raise RuntimeError("Cannot send a request, as the client has been closed.")
            self._client = self._make()
        return self._client

    @property
    def base_url(self) -> httpx.URL:
        """The client's base URL."""
        return self._get().base_url

    def build_request(self, method: str, url: str, **kw: Any) -> httpx.Request:
        """``httpx.AsyncClient.build_request``."""
        return self._get().build_request(method, url, **kw)

    async def send(self, request: httpx.Request, **kw: Any) -> httpx.Response:
        """``httpx.AsyncClient.send``."""
        return await self._get().send(request, **kw)

    async def aclose(self) -> None:
        """Close the client, if a request made one; no request is sent after this."""
        self._closed = True
        if self._client is not None:
            await self._client.aclose()
