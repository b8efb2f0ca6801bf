"""Fixtures: the servers' store on a schema of the test's PostgreSQL of its own (the
``nyla`` commands a test runs open the same), and the demo MCP server (a real stdio
process)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import anyio
import pytest
import pytest_asyncio

from nyla.sdk import TokenCipher
from nyla.testing.processes import http_server_process
from nyla_toolbox_mcp.cli import opened
from nyla_toolbox_mcp.servers import McpServer, ServerStore

T = TypeVar("T")

DEMO = Path(__file__).with_name("demo_server.py")
OAUTH_SERVER = Path(__file__).with_name("oauth_server.py")


@pytest_asyncio.fixture
async def store(tmp_path, monkeypatch, cli_database) -> AsyncIterator[ServerStore]:
    """The users' servers in the test's database (``NYLA_DATABASE_URL``, which the
    ``nyla`` commands of the test open too); ``NYLA_MCP_DIR`` is only where files of an
    earlier nyla would be imported from."""
    monkeypatch.setenv("NYLA_MCP_DIR", str(tmp_path / "mcp"))
    monkeypatch.setenv("NYLA_SECRET_KEY", TokenCipher.generate_key())
    monkeypatch.setenv("NYLA_DATABASE_URL", cli_database)
    monkeypatch.delenv("NYLA_DATABASE_SCHEMA", raising=False)
    async with opened() as store:
        yield store


def in_loop(work: Callable[[ServerStore], Awaitable[T]]) -> T:
    """``work(store)`` from a test that is not async itself (one that runs ``nyla``
    commands): in a loop of its own, on a connection of its own."""

    async def main() -> T:
        async with opened() as store:
            return await work(store)

    return anyio.run(main)


@pytest.fixture
def server_log(tmp_path) -> Path:
    return tmp_path / "received.log"


@pytest.fixture
def demo(server_log) -> McpServer:
    return McpServer(
        name="demo",
        transport="stdio",
        command=sys.executable,
        args=[str(DEMO)],
        env={"MCP_TEST_LOG": str(server_log)},
        timeout_s=3,
        start_timeout_s=120,
    )


@pytest.fixture(scope="module")
def oauth_base() -> Iterator[str]:
    """A running ``oauth_server.py`` (MCP over HTTP and its own authorization server) on
    127.0.0.1 at a free port: its base URL (the MCP endpoint is ``/mcp``)."""
    with http_server_process([sys.executable, str(OAUTH_SERVER)], ready_path="/test/state") as base:
        yield base
