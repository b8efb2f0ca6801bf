"""A small MCP server for the tests (run as a stdio process): a read-only lookup that
answers with personal data, a write tool that logs what it received to ``MCP_TEST_LOG``,
a tool that hangs, one that kills the process, one that floods and one that reports its
price."""

from __future__ import annotations

import os
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations

server = MCPServer("demo")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(customer: str) -> str:
    """Look a customer up by name."""
    return f"{customer}: mail ada.lovelace@example.com, IBAN CH93 0076 2011 6238 5295 7, plan gold"


@server.tool()
def note(text: str, priority: int = 1) -> str:
    """Write a note."""
    with Path(os.environ["MCP_TEST_LOG"]).open("a", encoding="utf-8") as log:
        log.write(text + "\n")
    return f"noted ({priority})"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def hang() -> str:
    """Never answers."""
    time.sleep(3600)
    return "late"


@server.tool()
def crash() -> str:
    """Kills the server."""
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def flood() -> str:
    """A huge answer."""
    return "x" * 300_000


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def quote(amount: float, currency: str = "CHF") -> CallToolResult:
    """A priced lookup: reports its price in the result's _meta as nyla's convention says."""
    return CallToolResult(
        content=[TextContent(type="text", text="quoted")],
        _meta={"dev.nyla/cost": {"amount": amount, "currency": currency}},
    )


if __name__ == "__main__":
    server.run("stdio")
