"""Fixtures: the demo MCP server (a real stdio process) configured for user ``ada`` in a
store under the test's temporary directory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nyla.sdk import TokenCipher
from nyla_toolbox_mcp.servers import McpServer, ServerStore

DEMO = Path(__file__).with_name("demo_server.py")


@pytest.fixture
def store(tmp_path, monkeypatch) -> ServerStore:
    monkeypatch.setenv("NYLA_MCP_DIR", str(tmp_path / "mcp"))
    monkeypatch.setenv("NYLA_SECRET_KEY", TokenCipher.generate_key())
    return ServerStore()


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
