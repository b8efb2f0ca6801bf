"""nyla as an MCP server: ``nyla mcp serve`` speaks MCP over stdio for the one user whose
nyla API token is in ``NYLA_TOKEN`` (no token, or a revoked or unknown one: nothing is
served — denied by default); :mod:`nyla_host.routes.mcp` serves the same server over
streamable HTTP. It offers ``searchKnowledge``: the knowledge search with the caller's own
scoping (what ``GET /api/knowledge/search`` would answer them); ``listDataSources``: the
caller's data sources; ``searchDataSource``: the search narrowed to one of them; and the
tools of the caller's connection toolboxes (e-mail, SharePoint, Jira, ClickUp, ... for the
connections they have and may use), listed and called through the gate of an agent run
(:class:`nyla.host.ConnectionTools`). Every text is neutralised before it leaves, since it
goes to another agent's model."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp.types import Tool as McpTool

from nyla import RunContext, SearchFilters, SearchQuery
from nyla.host import ConnectionTools, ServiceAccessDenied, list_data_sources
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


class _Gate:
    """Neutralises what leaves for another agent's model, placeholders stable per call."""

    def __init__(self, kernel: Any, context: RunContext) -> None:
        self.kernel = kernel
        self.context = context
        self.session: Any = None

    def __call__(self, text: str) -> str:
        out, self.session = self.kernel.ai.neutralize_text(
            text, context=self.context, session=self.session
        )
        return str(out)


async def _search(
    kernel: Any, context: RunContext, query: str, k: int, filters: SearchFilters | None = None
) -> str:
    """The hits of the caller's own knowledge search as JSON, text and file name neutralised."""
    if not query.strip():
        raise ToolError("query is empty")
    try:  # the knowledge store is a service the caller may have lost (nyla.access)
        await kernel.service_access.check_run(context, "service.knowledge")
    except ServiceAccessDenied as exc:
        raise ToolError(str(exc)) from None
    wanted = max(1, min(k, MAX_HITS))
    found = await kernel.knowledge.search(
        SearchQuery(text=query, context=context, k=wanted, filters=filters)
    )
    hits = found.to_wire()["hits"]
    gate = _Gate(kernel, context)
    for hit in hits:
        for field in ("text", "fileName"):
            hit[field] = gate(hit[field])
    return json.dumps(hits, ensure_ascii=False)


async def _own_sources(kernel: Any, user_id: str) -> list[tuple[Any, Any]]:
    """Each data source of the user's connections with its connection (as ``GET
    /api/datasources`` lists them)."""
    out = []
    for connection in await kernel.connections.list(user_id):
        out += [(connection, s) for s in await list_data_sources(kernel.db, connection.id)]
    return out


async def _list_sources(kernel: Any, context: RunContext) -> str:
    gate = _Gate(kernel, context)
    listed = [
        {
            "id": source.id,
            "service": connection.service,
            "connection": gate(connection.label or connection.service),
            "label": gate(source.label),
            "path": gate(source.path),
            "searchable": source.rag_index_effective,
        }
        for connection, source in await _own_sources(kernel, context.user_id)
    ]
    return json.dumps(listed, ensure_ascii=False)


class NylaServer(MCPServer):
    """nyla's MCP server of one user: its own tools, then their connection tools, read
    afresh on each listing and call (a connection added or access revoked counts at once)."""

    def __init__(self, kernel: Any, context: RunContext, **kw: Any) -> None:
        super().__init__("nyla", **kw)
        self.kernel, self.context = kernel, context

    async def list_tools(self) -> list[McpTool]:
        own = await super().list_tools()
        connected = await ConnectionTools.open(self.kernel.agent, self.context)
        return own + [
            McpTool(
                name=tool.name,
                description=tool.description,
                input_schema=tool.parameters,
                annotations=ToolAnnotations(read_only_hint=tool.read_only),
            )
            for tool in connected.tools
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self._tool_manager.get_tool(name) is not None:
            return await super().call_tool(name, arguments, context)
        connected = await ConnectionTools.open(self.kernel.agent, self.context)
        if connected.get(name) is None:  # never a hint whether another user has it
            raise ToolError(f"Unknown tool: {name}")
        result = await connected.call(name, arguments)
        text = _Gate(self.kernel, connected.context)(connected.text(result))
        return CallToolResult(
            content=[TextContent(type="text", text=text)], is_error=not result.success
        )


def build_server(kernel: Any, identity: Identity) -> MCPServer:
    """The MCP server of ``identity``: its tools see only what that user may read."""
    context = RunContext(
        user_id=identity.user_id, mandate_id=identity.mandate_id, role=identity.role.value
    )
    server = NylaServer(
        kernel,
        context,
        instructions="Search the knowledge and data sources of one nyla user and use the "
        "tools of their connected services.",
    )
    read_only = ToolAnnotations(read_only_hint=True)

    @server.tool(name="searchKnowledge", annotations=read_only)
    async def search_knowledge(query: str, k: int = 10) -> str:
        """Search the user's nyla knowledge store (semantic and full text); the best hits
        with file name and text, personal data replaced by placeholders."""
        return await _search(kernel, context, query, k)

    @server.tool(name="listDataSources", annotations=read_only)
    async def list_sources() -> str:
        """The user's data sources (folders, mailboxes, ... of their connected services):
        id, service, label, path and whether it is indexed, so searchable."""
        return await _list_sources(kernel, context)

    @server.tool(name="searchDataSource", annotations=read_only)
    async def search_source(source: str, query: str, k: int = 10) -> str:
        """Search within one of the user's data sources (``source``: an id listDataSources
        gives); the best hits with file name and text, personal data replaced by
        placeholders."""
        owned = {row.id for _, row in await _own_sources(kernel, identity.user_id)}
        if source not in owned:
            raise ToolError(f"no data source {source} (see listDataSources)")
        filters = SearchFilters(data_source_ids=[source])
        return await _search(kernel, context, query, k, filters)

    return server


async def serve_stdio(kernel: Any, token: str | None) -> None:
    """Serve ``build_server`` over stdin/stdout for the user of ``token``."""
    import nyla_host.tables  # noqa: F401  (the token table's model)

    identity = await identify(TokenStore(kernel.db), token)
    await build_server(kernel, identity).run_stdio_async()
