"""Fixtures: the demo MCP server (a real stdio process) configured for user ``ada`` in a
store under the test's temporary directory."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from nyla.sdk import TokenCipher
from nyla_toolbox_mcp.servers import McpServer, ServerStore

DEMO = Path(__file__).with_name("demo_server.py")
OAUTH_SERVER = Path(__file__).with_name("oauth_server.py")


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


@pytest.fixture(scope="module")
def oauth_base() -> Iterator[str]:
    """A running ``oauth_server.py`` (MCP over HTTP and its own authorization server) on
    127.0.0.1 at a free port: its base URL (the MCP endpoint is ``/mcp``)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(OAUTH_SERVER), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{base}/test/state", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the OAuth test server did not start") from None
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
