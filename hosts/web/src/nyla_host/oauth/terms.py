"""What a grant is: its one scope, how long each of its parts lives, and which resource it
may name."""

from __future__ import annotations

#: the one scope: use the MCP endpoint as the person who approved
SCOPE = "mcp"
#: seconds an access token lives (a refresh gives a new one)
ACCESS_TTL_S = 3600
#: seconds a refresh token lives unused (each refresh gives a new one)
REFRESH_TTL_S = 30 * 86400
#: seconds an authorization code may wait for its exchange
CODE_TTL_S = 60
#: seconds a person has to approve or deny
REQUEST_TTL_S = 600


def same_resource(requested: str | None, resource: str) -> bool:
    """Whether an RFC 8707 ``resource`` names this MCP endpoint (a trailing slash aside);
    none given means this one, the only resource this server issues tokens for."""
    return requested is None or requested.rstrip("/") == resource.rstrip("/")
