"""The authorization server's addresses, from the request's base URL (behind a reverse proxy:
the original ``Host`` and ``X-Forwarded-Proto``), so the issuer, the endpoints and the
resource name what the client reached."""

from __future__ import annotations

from fastapi import Request


def issuer(request: Request) -> str:
    """This server as an issuer: its base URL without a trailing slash."""
    return str(request.base_url).rstrip("/")


def resource_url(request: Request) -> str:
    """The MCP endpoint's URL: the audience of every access token this server issues."""
    return f"{issuer(request)}/mcp"


def resource_metadata_url(request: Request) -> str:
    """Where the MCP endpoint's protected-resource metadata is (RFC 9728 §3.1)."""
    return f"{issuer(request)}/.well-known/oauth-protected-resource/mcp"
