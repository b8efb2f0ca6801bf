"""What an MCP client sends first over nyla's streamable-HTTP ``/mcp``: the tests' one copy."""

from __future__ import annotations

#: a JSON-RPC ``initialize`` request of the protocol version nyla's server speaks
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
