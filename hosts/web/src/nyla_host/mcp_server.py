"""nyla as an MCP server: ``nyla mcp serve`` speaks MCP over stdio for the one user whose
nyla API token is in ``NYLA_TOKEN`` (no token, or a revoked or unknown one: nothing is
served — denied by default). It offers ``searchKnowledge``: the knowledge search with the
caller's own scoping (what ``GET /api/knowledge/search`` would answer them), every hit's
text neutralised before it leaves, since it goes to another agent's model."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from nyla import RunContext, SearchQuery
from nyla_host.identity import Identity
from nyla_host.tokens import TokenStore

#: the most hits one search returns
MAX_HITS = 50


class NotAuthenticated(PermissionError):
    """No valid nyla API token: the server does not start."""


async def identify(tokens: TokenStore, token: str | None) -> Identity:
    """The identity of ``token``; :class:`NotAuthenticated` without a valid one."""
    if not token or not token.strip():
        raise NotAuthenticated("set NYLA_TOKEN to a nyla API token (nyla tokens create)")
    identity = await tokens.verify(token.strip())
    if identity is None:
        raise NotAuthenticated("NYLA_TOKEN is not a valid nyla API token (revoked or unknown)")
    return identity


def build_server(kernel: Any, identity: Identity) -> MCPServer:
    """The MCP server of ``identity``: its tools see only what that user may read."""
    server = MCPServer("nyla", instructions="Search the knowledge store of one nyla user.")
    context = RunContext(user_id=identity.user_id, mandate_id=identity.mandate_id)

    @server.tool(name="searchKnowledge", annotations=ToolAnnotations(read_only_hint=True))
    async def search_knowledge(query: str, k: int = 10) -> str:
        """Search the user's nyla knowledge store (semantic and full text); the best hits
        with file name and text, personal data replaced by placeholders."""
        if not query.strip():
            raise ValueError("query is empty")
        wanted = max(1, min(k, MAX_HITS))
        result = await kernel.knowledge.search(SearchQuery(text=query, context=context, k=wanted))
        hits = result.to_wire()["hits"]
        session = None
        for hit in hits:
            for field in ("text", "fileName"):
                hit[field], session = kernel.ai.neutralize_text(
                    hit[field], context=context, session=session
                )
        return json.dumps(hits, ensure_ascii=False)

    return server


async def serve_stdio(kernel: Any, token: str | None) -> None:
    """Serve ``build_server`` over stdin/stdout for the user of ``token``."""
    import nyla_host.tables  # noqa: F401  (the token table's model)

    identity = await identify(TokenStore(kernel.db), token)
    await build_server(kernel, identity).run_stdio_async()
