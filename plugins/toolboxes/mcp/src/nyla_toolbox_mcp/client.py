"""Talking to one MCP server with the official SDK: a session opened for each listing or
call (a crashed server costs one call, never a long-lived connection), every step under
the server's time bound, and the server's stderr kept away from nyla's output."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from nyla_toolbox_mcp.errors import ServerTimeout
from nyla_toolbox_mcp.servers import McpServer

if TYPE_CHECKING:
    import httpx2

T = TypeVar("T")


@asynccontextmanager
async def open_session(
    server: McpServer, auth: httpx2.Auth | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised session with ``server`` (closed, and a stdio process stopped, on exit);
    ``auth`` signs an HTTP server's requests (OAuth)."""
    if server.transport == "stdio":
        params = StdioServerParameters(
            command=server.command or "", args=server.args, env=server.env or None
        )
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                yield session
        return
    client = create_mcp_http_client(headers=server.headers, auth=auth)
    async with (
        client,
        streamable_http_client(server.url or "", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def _bounded(
    server: McpServer,
    work: Callable[[ClientSession], Awaitable[T]],
    auth: httpx2.Auth | None = None,
) -> T:
    """``work(session)`` on a new session: starting it bound by ``server.start_timeout_s``,
    the work by ``server.timeout_s`` (a slow start on a busy machine is not a hung tool)."""
    phase, seconds = "start", server.start_timeout_s
    with anyio.CancelScope(deadline=anyio.current_time() + seconds) as scope:
        async with open_session(server, auth) as session:
            phase, seconds = "call", server.timeout_s
            scope.deadline = anyio.current_time() + seconds
            return await work(session)
    raise ServerTimeout(phase, seconds)


async def list_tools(server: McpServer, auth: httpx2.Auth | None = None) -> list[Any]:
    """Every tool the server lists (all pages)."""

    async def listing(session: ClientSession) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    return await _bounded(server, listing, auth)


async def call_tool(
    server: McpServer, name: str, arguments: dict[str, Any], auth: httpx2.Auth | None = None
) -> Any:
    """The server's ``CallToolResult`` for ``name(arguments)`` (:class:`ServerTimeout` past
    a bound)."""
    return await _bounded(server, lambda session: session.call_tool(name, arguments), auth)
