"""``nyla knowledge reindex``: move the store to the embedding model in use (or one named)."""

from __future__ import annotations

import time
from typing import Any

import click

from nyla.commands.output import emit_json, json_option, progress_bar, run_async, table


@click.command("reindex")
@click.option("--model", default=None, help="Embedding model to move to (default: the one in use).")
@json_option
def reindex(model: str | None, as_json: bool) -> None:
    """Embed every chunk and memory entry of another model again with the model in use, so
    vector search finds all of it. Safe to interrupt: run it again to go on."""
    from nyla.kernel import Kernel

    async def go() -> Any:
        kernel = Kernel(settings={"knowledge": {"embedding_model": model}} if model else {})
        try:
            started = time.perf_counter()
            with progress_bar("re-embedding", "rows · {task.fields[rate]}/s", quiet=as_json) as bar:
                task = bar.add_task("reindex", total=None, rate="0")

                def on_progress(done: int, total: int) -> None:
                    rate = done / max(time.perf_counter() - started, 1e-6)
                    bar.update(task, completed=done, total=total, rate=f"{rate:,.0f}")

                return await kernel.knowledge.reindex(model, on_progress=on_progress)
        finally:
            await kernel.aclose()

    result = run_async(go())
    if as_json:
        emit_json(result.to_wire())
        return
    rate = result.rows / result.seconds if result.seconds else 0.0
    table(
        "knowledge reindex",
        ["model", "dimensions", "rows re-embedded", "files now on it", "seconds", "rows/s"],
        [
            (
                result.model,
                result.dimensions or "-",
                result.rows,
                result.files,
                f"{result.seconds:.1f}",
                f"{rate:,.0f}",
            )
        ],
    )
