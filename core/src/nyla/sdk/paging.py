"""Paging helpers: follow a vendor's "next page" marker until the last page, yielding each
page's body as it comes (so a sync can yield, and checkpoint, page by page). Each raises what
its request raises: a listing that fails half-way never looks complete."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

#: one request of an OData listing: the URL and, on the first request only, its query
GetLink = Callable[[str, dict[str, str] | None], Awaitable[Any]]
#: one request of a token-paged listing, with the query (page token included)
GetPage = Callable[[dict[str, Any]], Awaitable[Any]]


async def odata_pages(
    get: GetLink, url: str, params: dict[str, str] | None = None
) -> AsyncIterator[dict[str, Any]]:
    """The pages of an OData listing (Microsoft Graph): ``url`` with ``params``, then each
    ``@odata.nextLink`` as it is (it carries the query) until a page has none."""
    link: str | None = url
    query = params
    while link:
        body: dict[str, Any] = await get(link, query)
        yield body
        link, query = body.get("@odata.nextLink"), None


async def token_pages(
    get: GetPage,
    params: Mapping[str, Any],
    start: str | None = None,
    token_param: str = "pageToken",
    next_key: str = "nextPageToken",
) -> AsyncIterator[dict[str, Any]]:
    """The pages of a token-paged listing (Google's ``pageToken``/``nextPageToken``): each
    request is ``params`` with the page token (``start`` first, if any) until a page names no
    next token."""
    token = start
    while True:
        query = dict(params)
        if token:
            query[token_param] = token
        body: dict[str, Any] = await get(query)
        yield body
        token = body.get(next_key)
        if not token:
            return
