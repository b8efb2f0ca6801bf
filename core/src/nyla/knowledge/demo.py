"""The knowledge-store step of ``make demo``: index the repository's ``docs/`` and the sample
files into the embedded store and run a few searches, offline, with the local embedder."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from nyla.models.agent import RunContext
from nyla.models.files import Scope
from nyla.models.knowledge import SearchQuery

if TYPE_CHECKING:
    from nyla.kernel import Kernel

REPO = Path(__file__).resolve().parents[4]
#: the offline embedders, best first: static WordLlama vectors, else the hashing embedder
LOCAL_EMBEDDERS = ("local:wordllama-l2-256", "local:hash-384")
#: (query, the file that must come first): the demo checks its own search
QUERIES = (
    ("When are VAT returns filed?", "sample.md"),
    ("quarterly revenue growth", "sample.pdf"),
    ("how many vacation days do employees have", "sample.md"),
    ("how do I write a plugin", "writing-a-plugin.md"),
)


def _pick_model(kernel: Kernel) -> str | None:
    """The best offline local embedder installed, else whatever the AI service picks."""
    ids = {m.id for m in kernel.plugins.models() if m.available}
    return next((model for model in LOCAL_EMBEDDERS if model in ids), None)


async def run_demo(kernel: Kernel, console: Any) -> None:
    """Index docs/ (global scope) and tests/data (the demo user's personal scope), then
    search and show what an agent round would get injected."""
    service = kernel.knowledge
    model = _pick_model(kernel)
    if model:
        service.settings.embedding_model = model
    context = RunContext(user_id="demo", mandate_id="demo-mandate", workflow_id="demo")
    sources = [
        (REPO / "docs", Scope.GLOBAL),
        (REPO / "tests" / "data", Scope.PERSONAL),
        (REPO / "README.md", Scope.GLOBAL),
    ]
    started = time.perf_counter()
    results = []
    for path, scope in sources:
        if not path.exists():
            continue
        with console.status(f"indexing {path.relative_to(REPO)} ({scope})…"):
            results += await service.indexing.index_paths([path], context=context, scope=scope)
    elapsed = time.perf_counter() - started
    indexed = [r for r in results if r.status == "indexed"]
    failed = [r for r in results if r.status != "indexed"]
    console.print(
        f"indexed {len(indexed)} files into {sum(r.chunks for r in indexed)} chunks "
        f"({sum(r.embedded for r in indexed)} embedded, {sum(r.reused for r in indexed)} reused) "
        f"with {indexed[0].embedding_model if indexed else '-'} in {elapsed:.1f} s"
    )
    for r in failed:
        console.print(f"  [yellow]{r.name}: {r.error}[/yellow]")

    right = 0
    for query, expected in QUERIES:
        result = await service.search(SearchQuery(text=query, context=context, k=3))
        first = result.hits[0].file_name if result.hits else None
        right += first == expected
        table = Table(
            title=f"“{query}” — {result.path}{' + full text' if result.hybrid else ''}",
            header_style="bold",
        )
        for col in ("score", "file", "where", "text"):
            table.add_column(col, overflow="fold")
        for hit in result.hits:
            table.add_row(
                f"{hit.score:.3f}",
                hit.file_name,
                hit.context_ref,
                " ".join(hit.text.split())[:110],
            )
        console.print(table)
    console.print(
        f"search check: {right} of {len(QUERIES)} queries put the expected file first"
        + ("" if right == len(QUERIES) else " [yellow](see the tables above)[/yellow]")
    )

    other = RunContext(user_id="someone-else")
    foreign = await service.search(SearchQuery(text="vacation days", context=other, k=3))
    leaked = [h for h in foreign.hits if h.scope == Scope.PERSONAL]
    console.print(
        f"scope check: another user searching the same store sees {len(foreign.hits)} global "
        f"hits and {len(leaked)} of the demo user's personal chunks"
    )
    block = await service.build_agent_context("How many vacation days do we have?", context)
    console.print(
        f"agent context for a round: {len(block)} characters, layers: "
        + ", ".join(line[4:] for line in block.splitlines() if line.startswith("### "))
    )
