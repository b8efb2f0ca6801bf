"""``downloadFromDataSource``'s file bridge: a downloaded item becomes a workspace file that
inherits its data source's ``neutralize`` and ``scope`` (longest path prefix), is labelled
``datasource:<service>`` and bound to the run's workflow as a chat document."""

from __future__ import annotations

from nyla.files.bridge import attach_to_run, format_tool_file_result
from nyla.knowledge.policy import covers, effective_policy, normalize_path
from nyla.models.datasource import Download
from nyla.models.files import Scope
from nyla.models.tools import ToolContext, ToolResult


async def store_download(
    ctx: ToolContext, connection_id: str, service: str, got: Download
) -> ToolResult:
    """Save ``got`` as a file of the run's user under the data source's policy."""
    sources = await ctx.services.knowledge.data_sources(connection_id)
    path = normalize_path(got.item.path or f"/{got.item.title}")
    covering = [d for d in sources if covers(d.path, path)]
    owner = max(covering, key=lambda d: len(normalize_path(d.path)), default=None)
    scope = Scope(effective_policy(sources, path, "scope").value)
    store = ctx.services.files
    item = await store.save(
        got.name,
        got.content,
        ctx.run,
        mime_type=got.mime,
        tags=[f"datasource:{service}"],
        scope=scope,
        neutralize=bool(effective_policy(sources, path, "neutralize").value),
        data_source_id=owner.id if owner else None,
    )
    doc_id = await attach_to_run(ctx, item, f"datasource:{service}")
    return ToolResult.ok(
        format_tool_file_result("Downloaded", item, doc_id),
        data={
            "fileId": item.id,
            "name": item.name,
            "size": item.size,
            "neutralize": item.neutralize,
            "docItem": f"docItem:{doc_id}" if doc_id else None,
        },
    )
