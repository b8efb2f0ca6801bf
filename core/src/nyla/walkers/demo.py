"""The data-source step of ``make demo``, offline: a local folder is connected (the
``nyla-connector-localfs`` plugin), searched live and downloaded through the datasources
tools, synced into the knowledge store by its walker (a second sync re-embeds nothing, a
deleted file leaves the index), and an agent run gets the search-first rule and finds the
synced text."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from nyla.agent.tool_services import tool_services
from nyla.models.agent import RunContext
from nyla.models.knowledge import SearchFilters, SearchQuery
from nyla.models.tools import ToolContext

if TYPE_CHECKING:
    from nyla.kernel import Kernel

USER = "demo"
FILES = {
    "meetings/2026-05-offsite.txt": "Offsite planning: the team meets in Lucerne on 12 June "
    "2026. Budget 4800 CHF, hotel Schweizerhof, agenda: roadmap and hiring.",
    "meetings/2026-04-board.txt": "Board meeting minutes: revenue grew 12 percent in Q1; the "
    "board approved the new office in Bern.",
    "finance/vat-2026.txt": "VAT returns are filed quarterly, due 60 days after the quarter.",
    "notes/ideas.md": "# Ideas\n\nA customer portal, a mobile app, better onboarding docs.",
}


async def _tool(kernel: Kernel, name: str, **args: Any) -> Any:
    tool = next(t for t in kernel.plugins.toolboxes["datasources"].tools if t.name == name)
    ctx = ToolContext(run=RunContext(user_id=USER), services=tool_services(kernel.agent.services))
    return await tool.handler(tool.args_model.model_validate(args), ctx)


def _result_table(title: str, result: Any) -> Table:
    table = Table(title=title, header_style="bold")
    cols = ("pages", "seen", "indexed", "unchanged", "deleted", "chunks", "sweep")
    for col in cols:
        table.add_column(col, overflow="fold")
    table.add_row(
        *map(str, (result.pages, result.items_seen, result.items_indexed,
                   result.items_unchanged, result.items_deleted, result.chunks_written)),
        result.sweep,
    )  # fmt: skip
    return table


async def run_demo(kernel: Kernel, console: Any) -> None:
    """Connect a temporary folder, search, download, sync twice, delete, find."""
    if "localfs" not in kernel.plugins.connectors:
        console.print("nyla-connector-localfs is not installed: step skipped")
        return
    from nyla.knowledge.demo import _pick_model

    model = _pick_model(kernel)
    if model:
        kernel.knowledge.settings.embedding_model = model
    root = Path(tempfile.mkdtemp(prefix="nyla-demo-folder-"))
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text + "\n", encoding="utf-8")
    conn = await kernel.connections.add("localfs", user_id=USER, label="Demo folder",
                                        settings={"root": str(root)})  # fmt: skip
    try:
        await _walk_through(kernel, console, conn.id, root)
    finally:
        await kernel.connections.remove(conn.id, user_id=USER)
        shutil.rmtree(root, ignore_errors=True)


async def _walk_through(kernel: Kernel, console: Any, connection_id: str, root: Path) -> None:
    console.print(f"connected {root} as {connection_id} (service localfs)")
    listed = await _tool(kernel, "searchDataSource", connectionId=connection_id, query="offsite")
    console.print("[bold]searchDataSource[/bold] 'offsite' (live, before any indexing):")
    console.print(listed.content)
    item_id = listed.data["items"][0]["id"]
    got = await _tool(kernel, "downloadFromDataSource", connectionId=connection_id, itemId=item_id)
    console.print(f"[bold]downloadFromDataSource[/bold]: {got.content.splitlines()[0]} "
                  f"(file {got.data['fileId']}, labelled datasource:localfs)")  # fmt: skip

    ds_id = f"ds-{connection_id}"
    await kernel.knowledge.governance.add_data_source(ds_id, connection_id, "/", user_id=USER,
                                                      rag_index_enabled=True)  # fmt: skip
    _, first = await kernel.sync.run(ds_id, user_id=USER)
    console.print(_result_table("first sync (walker: localfs)", first))
    _, second = await kernel.sync.run(ds_id, user_id=USER)
    console.print(_result_table("second sync: nothing changed, nothing re-embedded", second))
    (root / "notes" / "ideas.md").unlink()
    _, third = await kernel.sync.run(ds_id, user_id=USER)
    console.print(_result_table("after deleting notes/ideas.md", third))

    context = RunContext(user_id=USER)
    # in what this folder synced (the store also holds docs/ from the first step, whose pages
    # quote this very question)
    found = await kernel.knowledge.search(SearchQuery(text="where is the team offsite", context=context, k=1, filters=SearchFilters(data_source_ids=[ds_id])))  # fmt: skip
    hit = found.hits[0]
    console.print(f"knowledge search 'where is the team offsite' → {hit.file_name}: "
                  f"{' '.join(hit.text.split())[:90]}")  # fmt: skip
    from nyla.tools.datasources import data_source_prompt

    tools = kernel.plugins.toolboxes["datasources"].tools
    block = await data_source_prompt(kernel.connections, USER, tools) or ""
    console.print("system prompt block of an agent run for this user:")
    console.print("  " + block.splitlines()[0][:120] + " …")
    console.print("  " + block.splitlines()[1])
