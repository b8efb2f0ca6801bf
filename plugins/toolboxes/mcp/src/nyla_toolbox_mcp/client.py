"""Talking to one MCP server with the official SDK: a session opened for each listing or
call (a crashed server costs one call, never a long-lived connection), every step under
the server's time bound, and the server's stderr kept away from nyla's output."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from nyla_toolbox_mcp.servers import McpServer


@asynccontextmanager
async def open_session(server: McpServer) -> AsyncIterator[ClientSession]:
    """An initialised session with ``server`` (closed, and a stdio process stopped, on exit)."""
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
    client = create_mcp_http_client(headers=server.headers)
    async with (
        client,
        streamable_http_client(server.url or "", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def list_tools(server: McpServer) -> list[Any]:
    """Every tool the server lists (all pages), within ``server.timeout_s``."""
    tools: list[Any] = []
    with anyio.fail_after(server.timeout_s):
        async with open_session(server) as session:
            cursor: str | None = None
            while True:
                page = await session.list_tools(
                    params=None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
                )
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools


async def call_tool(server: McpServer, name: str, arguments: dict[str, Any]) -> Any:
    """The server's ``CallToolResult`` for ``name(arguments)``, within ``server.timeout_s``
    (``TimeoutError`` past it)."""
    with anyio.fail_after(server.timeout_s):
        async with open_session(server) as session:
            return await session.call_tool(name, arguments)
